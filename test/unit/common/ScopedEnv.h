/// \file
/// ScopedEnv: sets an environment variable for a scope and restores what was there (the value,
/// or its absence) when the scope ends. For tests that point EMBER_* knobs somewhere else.
#ifndef EMBER_TEST_UNIT_COMMON_SCOPEDENV_H
#define EMBER_TEST_UNIT_COMMON_SCOPEDENV_H

#include <cstdlib>
#include <optional>
#include <string>

namespace ember::testing {

class ScopedEnv {
public:
    ScopedEnv(const char *name, const std::string &value) : name_(name) {
        if (const char *old = std::getenv(name)) saved_ = old;
        ::setenv(name, value.c_str(), 1);
    }
    ~ScopedEnv() {
        if (saved_) ::setenv(name_.c_str(), saved_->c_str(), 1);
        else ::unsetenv(name_.c_str());
    }
    ScopedEnv(const ScopedEnv &) = delete;
    ScopedEnv &operator=(const ScopedEnv &) = delete;

private:
    std::string name_;
    std::optional<std::string> saved_;
};

} // namespace ember::testing

#endif // EMBER_TEST_UNIT_COMMON_SCOPEDENV_H
