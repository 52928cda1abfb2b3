/// \file
/// Reading user files (regular files only, bounded) and checked writes: every failure is a
/// LogicError naming the path and why, never an ios_failure, a bad_alloc or an endless read.
#include "ember/Error.h"
#include "ember/compiler/Bundle.h"
#include "ember/compiler/FileIO.h"

#include "ScopedEnv.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

using namespace ember;
namespace fs = std::filesystem;

namespace {

class FileIOTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               ("ember-fileio-test-" + std::to_string(::getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    std::string path(const char *name) const { return (dir_ / name).string(); }
    fs::path dir_;
};

/// The LogicError message of `f`, or "no LogicError".
template <class F> std::string error_of(F &&f) {
    try {
        f();
    } catch (const LogicError &e) {
        return e.what();
    }
    return "no LogicError";
}

TEST_F(FileIOTest, ReadsARegularFileAndALinkToOne) {
    std::ofstream(path("a.txt"), std::ios::binary) << "hello\n";
    EXPECT_EQ(read_regular_file(path("a.txt")), "hello\n");
    fs::create_symlink(path("a.txt"), path("link.txt"));
    EXPECT_EQ(read_regular_file(path("link.txt")), "hello\n");
    EXPECT_EQ(read_regular_file_if_exists(path("a.txt")).value_or("?"), "hello\n");
    EXPECT_FALSE(read_regular_file_if_exists(path("missing.txt")).has_value());
}

TEST_F(FileIOTest, RejectsWhatIsNotARegularFile) {
    EXPECT_EQ(error_of([&] { read_regular_file(dir_.string()); }),
              "cannot read '" + dir_.string() + "': it is a directory, not a regular file");
    EXPECT_EQ(error_of([] { read_regular_file("/dev/zero"); }),
              "cannot read '/dev/zero': it is a character device, not a regular file");
    fs::create_symlink("/dev/zero", path("zero"));
    EXPECT_EQ(error_of([&] { read_regular_file_if_exists(path("zero")); }),
              "cannot read '" + path("zero") + "': it is a character device, not a regular file");
    // A FIFO without a writer: rejected at once, not waited on.
    ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
    EXPECT_EQ(error_of([&] { read_regular_file(path("fifo")); }),
              "cannot read '" + path("fifo") + "': it is a FIFO (named pipe), not a regular file");
    EXPECT_NE(error_of([&] { read_regular_file(path("missing")); })
                  .find("cannot open '" + path("missing") + "': No such file or directory"),
              std::string::npos);
}

TEST_F(FileIOTest, ReadsAreBounded) {
    std::ofstream(path("ten"), std::ios::binary) << "0123456789";
    EXPECT_EQ(read_regular_file(path("ten"), 10), "0123456789");
    EXPECT_EQ(error_of([&] { read_regular_file(path("ten"), 9); }),
              "cannot read '" + path("ten") + "': it holds 10 bytes, more than the limit of 9 bytes");
    // A stream has no size up front: the read stops at the limit.
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    ASSERT_EQ(::write(fds[1], "0123456789", 10), 10);
    ::close(fds[1]);
    EXPECT_EQ(error_of([&] { read_descriptor(fds[0], "<stdin>", 4); }),
              "cannot read <stdin>: it holds more than the limit of 4 bytes");
    ::close(fds[0]);
    EXPECT_EQ(max_input_file_bytes, uint64_t(256) << 20);
}

TEST_F(FileIOTest, WritesAreChecked) {
    write_whole_file(path("out"), "abc");
    EXPECT_EQ(read_regular_file(path("out")), "abc");
    EXPECT_EQ(error_of([] { write_whole_file("/dev/full", "abc"); }),
              "cannot write to '/dev/full': No space left on device");
    EXPECT_EQ(error_of([&] { write_whole_file(dir_.string(), "abc"); }),
              "cannot open '" + dir_.string() + "' for writing: Is a directory");
}

TEST_F(FileIOTest, BundleFilesMustBeRegularFiles) {
    ReproBundle b;
    b.kernel_name = "k";
    b.ir = "kernel @k(%out: ptr<global i32>) {\n  %out[0:i64] = 1:i32\n}\n";
    b.target = TargetSpec::parse("cpu");
    b.llvm = "; llvm\n";
    std::string why, dir;
    {
        ember::testing::ScopedEnv dump_dir("EMBER_DUMP_DIR", dir_.string());
        dir = write_bundle(b, &why);
    }
    ASSERT_FALSE(dir.empty()) << why;
    EXPECT_EQ(read_bundle(dir).llvm, "; llvm\n");

    const std::string llvm = (fs::path(dir) / "llvm.ll").string();
    fs::remove(llvm);
    fs::create_symlink("/dev/zero", llvm);
    EXPECT_EQ(error_of([&] { read_bundle(dir); }),
              "repro bundle '" + dir + "': cannot read '" + llvm +
                  "': it is a character device, not a regular file");
    fs::remove(llvm);
    fs::create_directory(llvm);
    EXPECT_EQ(error_of([&] { read_bundle(dir); }),
              "repro bundle '" + dir + "': cannot read '" + llvm + "': it is a directory, not a regular file");
    fs::remove(llvm);
    EXPECT_TRUE(read_bundle(dir).llvm.empty()); // an optional stage may be missing
}

} // namespace
