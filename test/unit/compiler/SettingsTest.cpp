/// \file
/// The EMBER_* variables: one list, documented in the README exactly, one boolean vocabulary, and
/// a warning naming the variable and what it accepts.
#include "ember/compiler/Settings.h"
#include "ember/Error.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace {

using namespace ember;

/// Sets a variable for the scope, and puts the old value back.
class ScopedEnv {
public:
    ScopedEnv(const char *name, const char *value) : name_(name) {
        if (const char *old = std::getenv(name)) old_ = old;
        ::setenv(name, value, 1);
    }
    ~ScopedEnv() {
        if (old_) ::setenv(name_, old_->c_str(), 1);
        else ::unsetenv(name_);
    }

private:
    const char *name_;
    std::optional<std::string> old_;
};

TEST(SettingsTest, TheReadmeDocumentsExactlyTheVariablesEmberReads) {
    std::ifstream f(std::string(EMBER_SOURCE_DIR) + "/README.md");
    ASSERT_TRUE(f) << "README.md not found under " << EMBER_SOURCE_DIR;
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string readme = ss.str();
    // Rows of the README's table start with "| `EMBER_NAME".
    std::set<std::string> documented;
    const std::regex row(R"(\n\| `(EMBER_[A-Z0-9_]+))");
    for (auto it = std::sregex_iterator(readme.begin(), readme.end(), row); it != std::sregex_iterator(); ++it)
        documented.insert((*it)[1]);
    std::set<std::string> read;
    for (const settings::Variable &v : settings::variables()) read.insert(std::string(v.name));
    for (const std::string &name : read) EXPECT_TRUE(documented.count(name)) << name << " is read but not in the README's table";
    for (const std::string &name : documented) EXPECT_TRUE(read.count(name)) << name << " is documented but never read";
}

TEST(SettingsTest, BooleansShareOneVocabulary) {
    for (const char *yes : {"1", "true", "TRUE", "yes", "on", "On"}) {
        ScopedEnv e("EMBER_PRELOAD", yes);
        EXPECT_TRUE(settings::flag("EMBER_PRELOAD", false)) << yes;
    }
    for (const char *no : {"0", "false", "no", "OFF"}) {
        ScopedEnv e("EMBER_DISABLE_CACHE", no);
        EXPECT_FALSE(settings::flag("EMBER_DISABLE_CACHE", true)) << no;
    }
    ScopedEnv empty("EMBER_PRELOAD", "");
    EXPECT_TRUE(settings::flag("EMBER_PRELOAD", true));
    EXPECT_FALSE(settings::flag("EMBER_PRELOAD", false));
}

TEST(SettingsTest, AValueNotUnderstoodWarnsOnceNamingWhatIsAccepted) {
    ScopedEnv e("EMBER_DISABLE_CACHE", "perhaps");
    ::testing::internal::CaptureStderr();
    EXPECT_FALSE(settings::flag("EMBER_DISABLE_CACHE", false));
    EXPECT_FALSE(settings::flag("EMBER_DISABLE_CACHE", false));
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("EMBER_DISABLE_CACHE='perhaps'"), std::string::npos) << err;
    EXPECT_NE(err.find("accepted: 1, true, yes, on or 0, false, no, off"), std::string::npos) << err;
    EXPECT_EQ(err.find("EMBER_DISABLE_CACHE", err.find('\n')), std::string::npos) << "warned twice: " << err;
}

TEST(SettingsTest, ReadingAnUnlistedVariableIsALogicError) {
    EXPECT_THROW(settings::text("EMBER_NOT_A_SETTING"), LogicError);
    EXPECT_THROW(settings::flag("HOME", false), LogicError);
}

} // namespace
