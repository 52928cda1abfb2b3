/// Tests of the disk store of the compile cache (runtime/lib/DiskCache.h): round trips, misses,
/// every kind of damaged entry, key validation, LRU eviction, several processes and threads on
/// one key, and the environment. The store has no device, so these run once, not per api.
#include "DiskCache.h"

#include "ember/Error.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <algorithm>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

namespace ember::detail {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path &p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_file(const fs::path &p, const std::string &bytes) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// Bytes that exercise every checksum path and contain NULs.
std::string payload_of(size_t n, unsigned seed = 1) {
    std::string s(n, '\0');
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; ++i) {
        x = x * 1664525u + 1013904223u;
        s[i] = static_cast<char>(x >> 24);
    }
    return s;
}

/// The names of the files in `dir`.
std::set<std::string> files_in(const fs::path &dir) {
    std::set<std::string> out;
    for (const auto &e : fs::directory_iterator(dir))
        out.insert(e.path().filename().string());
    return out;
}

void set_mtime(const fs::path &p, time_t seconds_ago) {
    struct timespec times[2];
    times[0].tv_sec = 0;
    times[0].tv_nsec = UTIME_OMIT;
    times[1].tv_sec = std::time(nullptr) - seconds_ago;
    times[1].tv_nsec = 0;
    ASSERT_EQ(::utimensat(AT_FDCWD, p.c_str(), times, 0), 0) << p;
}

class DiskCacheTest : public ::testing::Test {
protected:
    void SetUp() override {
        std::string tmpl = (fs::path(::testing::TempDir()) / "ember-diskcache-XXXXXX").string();
        ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
        root_ = tmpl;
        dir_ = root_ / "nested" / "cache"; // created with its parents by DiskCache
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(root_, ec);
    }
    fs::path root_, dir_;
};

TEST_F(DiskCacheTest, RoundTripOfSeveralSizesAndKinds) {
    DiskCache cache(dir_, uint64_t(1) << 30);
    EXPECT_TRUE(fs::is_directory(dir_));
    EXPECT_EQ(fs::status(dir_).permissions() & fs::perms::all, fs::perms::owner_all);
    const size_t sizes[] = {0, 1, 7, 31, 32, 33, 4096, 1 << 20};
    for (size_t n : sizes) {
        std::string key = "k" + std::to_string(n);
        cache.store(key, "ptx", payload_of(n, 1));
        cache.store(key, "cubin-sm_90", payload_of(n, 2));
    }
    for (size_t n : sizes) {
        std::string key = "k" + std::to_string(n);
        EXPECT_EQ(cache.load(key, "ptx"), payload_of(n, 1)) << n;
        EXPECT_EQ(cache.load(key, "cubin-sm_90"), payload_of(n, 2)) << n;
    }
    std::string file = read_file(dir_ / "k7.ptx");
    EXPECT_EQ(file.substr(0, 7), std::string("EMBERC\0", 7));
    EXPECT_EQ(file.size(), DiskCache::kHeaderFixedBytes + 3 + 2 + 7);
}

TEST_F(DiskCacheTest, MissIsSilentAndStoreReplaces) {
    DiskCache cache(dir_, uint64_t(1) << 30);
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(cache.load("absent", "ptx"), std::nullopt);
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
    cache.store("abc", "ptx", "first");
    cache.store("abc", "ptx", "second, longer");
    EXPECT_EQ(cache.load("abc", "ptx"), "second, longer");
    EXPECT_EQ(cache.load("abc", "cpu-obj"), std::nullopt);
    EXPECT_TRUE(cache.remove("abc", "ptx"));
    EXPECT_FALSE(cache.remove("abc", "ptx"));
    EXPECT_EQ(cache.load("abc", "ptx"), std::nullopt);
    EXPECT_EQ(files_in(dir_), std::set<std::string>{});
}

TEST_F(DiskCacheTest, StoreRecreatesARemovedDirectory) {
    DiskCache cache(dir_, uint64_t(1) << 30);
    fs::remove_all(dir_);
    cache.store("abc", "ptx", "bytes");
    EXPECT_EQ(cache.load("abc", "ptx"), "bytes");
}

/// Stores a good entry, damages its file with `damage`, then checks that a load is a miss with
/// the warning line naming the file and `what`, that the file is gone, and that a new store works.
void expect_recovers(const fs::path &dir, const std::string &what,
                     const std::function<void(const fs::path &file)> &damage) {
    SCOPED_TRACE(what);
    DiskCache cache(dir, uint64_t(1) << 30);
    const std::string payload = payload_of(100, 7);
    cache.store("0123abcdef", "ptx", payload);
    fs::path file = cache.entry_path("0123abcdef", "ptx");
    ASSERT_TRUE(fs::exists(file));
    damage(file);
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(cache.load("0123abcdef", "ptx"), std::nullopt);
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(err.rfind("ember: cache: " + file.string() + ": ", 0), 0u) << err;
    EXPECT_NE(err.find(what), std::string::npos) << err;
    EXPECT_NE(err.find("; recompiling\n"), std::string::npos) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_FALSE(fs::exists(file));
    cache.store("0123abcdef", "ptx", payload);
    EXPECT_EQ(cache.load("0123abcdef", "ptx"), payload);
}

TEST_F(DiskCacheTest, FlippedPayloadByte) {
    expect_recovers(dir_, "payload checksum mismatch", [](const fs::path &f) {
        std::string b = read_file(f);
        b[b.size() - 10] ^= 0x01;
        write_file(f, b);
    });
}

TEST_F(DiskCacheTest, TruncatedHeader) {
    expect_recovers(dir_, "truncated header", [](const fs::path &f) { fs::resize_file(f, 20); });
    expect_recovers(dir_, "truncated header", [](const fs::path &f) { fs::resize_file(f, 0); });
    // The fixed part whole, the key cut.
    expect_recovers(dir_, "truncated header", [](const fs::path &f) {
        fs::resize_file(f, DiskCache::kHeaderFixedBytes + 5);
    });
}

TEST_F(DiskCacheTest, TruncatedPayload) {
    expect_recovers(dir_, "truncated payload (95 of 100 bytes)", [](const fs::path &f) {
        fs::resize_file(f, fs::file_size(f) - 5);
    });
}

TEST_F(DiskCacheTest, TrailingBytes) {
    expect_recovers(dir_, "3 bytes after the payload", [](const fs::path &f) {
        write_file(f, read_file(f) + "xyz");
    });
}

TEST_F(DiskCacheTest, WrongMagic) {
    expect_recovers(dir_, "wrong magic", [](const fs::path &f) {
        std::string b = read_file(f);
        b[0] = 'X';
        write_file(f, b);
    });
}

TEST_F(DiskCacheTest, WrongVersion) {
    expect_recovers(dir_, "format version 2, expected 1", [](const fs::path &f) {
        std::string b = read_file(f);
        b[8] = 2;
        write_file(f, b);
    });
}

TEST_F(DiskCacheTest, DamagedHeaderField) {
    // The payload size says 1 byte less: caught by the header checksum before anything trusts it.
    expect_recovers(dir_, "header checksum mismatch", [](const fs::path &f) {
        std::string b = read_file(f);
        b[16] = static_cast<char>(b[16] - 1);
        write_file(f, b);
    });
}

TEST_F(DiskCacheTest, WrongKeyInHeader) {
    // A whole entry of another key under this entry's name (a renamed or copied file).
    expect_recovers(dir_, "holds key '0123abcdee', expected '0123abcdef'", [&](const fs::path &f) {
        DiskCache other(f.parent_path(), uint64_t(1) << 30);
        other.store("0123abcdee", "ptx", payload_of(100, 7));
        fs::rename(other.entry_path("0123abcdee", "ptx"), f);
    });
    expect_recovers(dir_, "holds kind 'cpu', expected 'ptx'", [&](const fs::path &f) {
        DiskCache other(f.parent_path(), uint64_t(1) << 30);
        other.store("0123abcdef", "cpu", payload_of(100, 7));
        fs::rename(other.entry_path("0123abcdef", "cpu"), f);
    });
}

TEST_F(DiskCacheTest, ForeignFileWithTheEntrysName) {
    expect_recovers(dir_, "wrong magic", [](const fs::path &f) {
        write_file(f, "#!/bin/sh\necho this is not an ember cache entry at all, but long enough\n");
    });
    expect_recovers(dir_, "wrong magic", [](const fs::path &f) { write_file(f, "ELF\x7f..."); });
}

TEST_F(DiskCacheTest, FifoWithTheEntrysNameIsAMissNotAHang) {
    DiskCache cache(dir_, uint64_t(1) << 30);
    fs::path file = cache.entry_path("fifo", "ptx");
    ASSERT_EQ(::mkfifo(file.c_str(), 0600), 0);
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(cache.load("fifo", "ptx"), std::nullopt);
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find(file.string() + ": not a regular file; recompiling"), std::string::npos) << err;
    cache.store("fifo", "ptx", "bytes"); // the rename replaces the FIFO
    EXPECT_EQ(cache.load("fifo", "ptx"), "bytes");
}

TEST_F(DiskCacheTest, KeyAndKindValidation) {
    DiskCache cache(dir_, uint64_t(1) << 30);
    const std::string bad_keys[] = {"", "a.b", "a/b", "../x", "a b", "k\n", std::string(161, 'a'),
                                    std::string("a\0b", 3)};
    for (const std::string &key : bad_keys) {
        EXPECT_THROW(cache.load(key, "ptx"), LogicError) << key;
        EXPECT_THROW(cache.store(key, "ptx", "x"), LogicError) << key;
        EXPECT_THROW(cache.remove(key, "ptx"), LogicError) << key;
    }
    for (const char *kind : {"", "p.x", "p/x", "tmp.1"}) {
        EXPECT_THROW(cache.load("abc", kind), LogicError) << kind;
        EXPECT_THROW(cache.store("abc", kind, "x"), LogicError) << kind;
    }
    EXPECT_THROW(cache.store("abc", std::string(33, 'k'), "x"), LogicError);
    try {
        cache.store("a/b", "ptx", "x");
        FAIL() << "no LogicError";
    } catch (const LogicError &e) {
        EXPECT_NE(std::string(e.what()).find("key 'a/b'"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("[0-9a-zA-Z_-]"), std::string::npos) << e.what();
    }
    // The longest key and kind, and every allowed character.
    std::string longest(DiskCache::kMaxKeyLength, 'F');
    cache.store(longest, std::string(DiskCache::kMaxKindLength, 'k'), "x");
    EXPECT_EQ(cache.load(longest, std::string(DiskCache::kMaxKindLength, 'k')), "x");
    cache.store("AZaz09_-", "cpu-obj_x86", "y");
    EXPECT_EQ(cache.load("AZaz09_-", "cpu-obj_x86"), "y");
    EXPECT_EQ(files_in(dir_).size(), 2u);
}

TEST_F(DiskCacheTest, EvictionKeepsTheCapAndRemovesLeastRecentlyUsed) {
    const std::string payload = payload_of(1000);
    const uint64_t entry = DiskCache::kHeaderFixedBytes + 3 + 2 + payload.size(); // keys "eN"
    DiskCache cache(dir_, 3 * entry + entry / 2); // room for three entries
    for (const char *key : {"e1", "e2", "e3"})
        cache.store(key, "ptx", payload);
    EXPECT_EQ(cache.size_bytes(), 3 * entry);
    set_mtime(cache.entry_path("e1", "ptx"), 300);
    set_mtime(cache.entry_path("e2", "ptx"), 200);
    set_mtime(cache.entry_path("e3", "ptx"), 100);
    EXPECT_EQ(cache.load("e1", "ptx"), payload); // e1 becomes the most recently used
    cache.store("e4", "ptx", payload);
    EXPECT_EQ(files_in(dir_), (std::set<std::string>{"e1.ptx", "e3.ptx", "e4.ptx"}));
    EXPECT_LE(cache.size_bytes(), cache.max_bytes());

    // A larger entry pushes out the two oldest.
    set_mtime(cache.entry_path("e3", "ptx"), 50);
    set_mtime(cache.entry_path("e1", "ptx"), 40);
    set_mtime(cache.entry_path("e4", "ptx"), 30);
    cache.store("e5", "ptx", payload_of(2000));
    EXPECT_EQ(files_in(dir_), (std::set<std::string>{"e4.ptx", "e5.ptx"}));
    EXPECT_LE(cache.size_bytes(), cache.max_bytes());
    EXPECT_EQ(cache.load("e4", "ptx"), payload);
    EXPECT_EQ(cache.load("e5", "ptx"), payload_of(2000));
}

TEST_F(DiskCacheTest, ALoadRenewsRecencyToTheMinute) {
    DiskCache cache(dir_, uint64_t(1) << 20);
    cache.store("old", "ptx", "a");
    cache.store("fresh", "ptx", "b");
    set_mtime(cache.entry_path("old", "ptx"), 120);
    set_mtime(cache.entry_path("fresh", "ptx"), 10);
    auto mtime = [&](const char *key) { return fs::last_write_time(cache.entry_path(key, "ptx")); };
    const auto fresh_before = mtime("fresh"), old_before = mtime("old");
    EXPECT_EQ(cache.load("old", "ptx"), "a");
    EXPECT_EQ(cache.load("fresh", "ptx"), "b");
    EXPECT_GT(mtime("old"), old_before) << "an entry two minutes old is renewed";
    EXPECT_EQ(mtime("fresh"), fresh_before) << "an entry used ten seconds ago is recent already";
}

TEST_F(DiskCacheTest, LargeEntriesAreReadHeaderFirstAndWhole) {
    // Over the one-read size (1 MiB), the header is checked before the payload is read.
    DiskCache cache(dir_, uint64_t(64) << 20);
    const std::string big = payload_of(3 << 20);
    cache.store("big", "cubin", big);
    EXPECT_EQ(cache.load("big", "cubin"), big);
    {
        std::fstream f(cache.entry_path("big", "cubin"), std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(static_cast<std::streamoff>(big.size() / 2 + 100));
        f.put('\x01');
    }
    ::testing::internal::CaptureStderr();
    EXPECT_FALSE(cache.load("big", "cubin"));
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("payload checksum mismatch; recompiling"), std::string::npos) << err;
}

TEST_F(DiskCacheTest, EntryLargerThanTheCapIsNotStored) {
    DiskCache cache(dir_, 500);
    cache.store("small", "ptx", "abc");
    ::testing::internal::CaptureStderr();
    cache.store("big", "ptx", payload_of(1000));
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("exceeds EMBER_CACHE_MAX_BYTES (500); not stored"), std::string::npos) << err;
    EXPECT_EQ(files_in(dir_), std::set<std::string>{"small.ptx"});
    EXPECT_EQ(cache.load("big", "ptx"), std::nullopt);
    EXPECT_EQ(cache.load("small", "ptx"), "abc");
}

TEST_F(DiskCacheTest, SizeCountsEntriesOnlyAndStaleTempFilesAreCleaned) {
    DiskCache cache(dir_, uint64_t(1) << 30);
    cache.store("abc", "ptx", "12345");
    write_file(dir_ / "README", "not ours");
    write_file(dir_ / "abc.ptx.tmp.123.deadbeef", "a dead process's temporary");
    write_file(dir_ / "abd.ptx.tmp.124.deadbeef", "a live process's temporary");
    set_mtime(dir_ / "abc.ptx.tmp.123.deadbeef", 2 * 3600);
    EXPECT_EQ(cache.size_bytes(), DiskCache::kHeaderFixedBytes + 3 + 3 + 5);
    cache.store("xyz", "ptx", "6");
    EXPECT_EQ(files_in(dir_), (std::set<std::string>{"README", "abc.ptx", "abd.ptx.tmp.124.deadbeef",
                                                     "xyz.ptx"}));
}

/// Runs `body` in `n` forked children, each with its stderr in its own file; expects every child
/// to exit with 0 and to print nothing.
void run_children(const fs::path &logs, int n, const std::function<int(int)> &body) {
    std::vector<pid_t> pids;
    for (int i = 0; i < n; ++i) {
        fs::path log = logs / ("child" + std::to_string(i) + ".err");
        pid_t pid = ::fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd < 0 || ::dup2(fd, 2) < 0)
                ::_exit(100);
            int rc = 101;
            try {
                rc = body(i);
            } catch (...) {
                rc = 102;
            }
            std::fflush(stderr);
            ::_exit(rc);
        }
        pids.push_back(pid);
    }
    for (int i = 0; i < n; ++i) {
        int status = 0;
        ASSERT_EQ(::waitpid(pids[i], &status, 0), pids[i]);
        EXPECT_TRUE(WIFEXITED(status)) << "child " << i;
        EXPECT_EQ(WEXITSTATUS(status), 0) << "child " << i;
        EXPECT_EQ(read_file(logs / ("child" + std::to_string(i) + ".err")), "") << "child " << i;
    }
}

TEST_F(DiskCacheTest, SeveralProcessesStoreAndLoadOneKey) {
    DiskCache cache(dir_, uint64_t(1) << 30);
    fs::path logs = root_ / "logs";
    fs::create_directory(logs);
    const std::string payload = payload_of(64 * 1024, 3);
    run_children(logs, 8, [&](int) {
        DiskCache mine(dir_, uint64_t(1) << 30);
        for (int round = 0; round < 50; ++round) {
            mine.store("samekey", "cubin", payload);
            std::optional<std::string> got = mine.load("samekey", "cubin");
            if (!got)
                return 1;
            if (*got != payload)
                return 2;
        }
        return 0;
    });
    EXPECT_EQ(files_in(dir_), std::set<std::string>{"samekey.cubin"});
    EXPECT_EQ(cache.load("samekey", "cubin"), payload);
}

TEST_F(DiskCacheTest, SeveralProcessesLoadWhileOthersEvict) {
    // Eight keys of 4 KB under a cap of about three: stores evict constantly while other
    // processes load. A load is a miss or the exact bytes of its key, never anything else.
    const uint64_t cap = 3 * (DiskCache::kHeaderFixedBytes + 10 + 4096) + 100;
    DiskCache cache(dir_, cap);
    fs::path logs = root_ / "logs";
    fs::create_directory(logs);
    run_children(logs, 8, [&](int child) {
        DiskCache mine(dir_, cap);
        for (int round = 0; round < 50; ++round) {
            int k = (child + round) % 8;
            std::string key = "key" + std::to_string(k);
            std::optional<std::string> got = mine.load(key, "ptx");
            if (got && *got != payload_of(4096, k))
                return 2;
            if (!got)
                mine.store(key, "ptx", payload_of(4096, k));
        }
        return 0;
    });
    EXPECT_LE(cache.size_bytes(), cap);
    for (const std::string &name : files_in(dir_))
        EXPECT_EQ(name.find(".tmp."), std::string::npos) << name;
}

TEST_F(DiskCacheTest, SeveralThreadsStoreAndLoadOneKey) {
    DiskCache cache(dir_, uint64_t(1) << 30);
    const std::string payload = payload_of(10000, 5);
    std::vector<std::thread> threads;
    std::vector<int> failures(8, 0);
    for (int t = 0; t < 8; ++t)
        threads.emplace_back([&, t] {
            for (int round = 0; round < 50; ++round) {
                cache.store("threaded", "ptx", payload);
                if (cache.load("threaded", "ptx") != payload)
                    ++failures[t];
            }
        });
    for (auto &th : threads)
        th.join();
    EXPECT_EQ(failures, std::vector<int>(8, 0));
    EXPECT_EQ(files_in(dir_), std::set<std::string>{"threaded.ptx"});
}

TEST(DiskCacheChecksum, MatchesXxh64) {
    // Reference values of XXH64, seed 0 (xxHash's own test vectors and python-xxhash's README).
    EXPECT_EQ(checksum64(""), 0xEF46DB3751D8E999ull);
    EXPECT_EQ(checksum64("abc"), 0x44BC2CF5AD770999ull);
    EXPECT_EQ(checksum64("Nobody inspects the spammish repetition"), 0xFBCEA83C8A378BF1ull);
    // Every single-bit flip of a payload changes it.
    std::string p = payload_of(300);
    uint64_t base = checksum64(p);
    for (size_t i = 0; i < p.size(); ++i) {
        std::string q = p;
        q[i] ^= static_cast<char>(1u << (i % 8));
        EXPECT_NE(checksum64(q), base) << i;
    }
}

TEST(DiskCacheEnv, ParseByteSize) {
    EXPECT_EQ(parse_byte_size("0"), 0u);
    EXPECT_EQ(parse_byte_size("1073741824"), 1073741824u);
    EXPECT_EQ(parse_byte_size("512K"), 512u << 10);
    EXPECT_EQ(parse_byte_size("512k"), 512u << 10);
    EXPECT_EQ(parse_byte_size("512M"), uint64_t(512) << 20);
    EXPECT_EQ(parse_byte_size("2G"), uint64_t(2) << 30);
    EXPECT_EQ(parse_byte_size("2GB"), uint64_t(2) << 30);
    EXPECT_EQ(parse_byte_size("2GiB"), uint64_t(2) << 30);
    EXPECT_EQ(parse_byte_size("3T"), uint64_t(3) << 40);
    EXPECT_EQ(parse_byte_size("100B"), 100u);
    EXPECT_EQ(parse_byte_size("18446744073709551615"), UINT64_MAX);
    for (const char *bad : {"", "G", "-1", "1.5G", " 1G", "1G ", "1 G", "1X", "1GG", "1iB",
                            "18446744073709551616", "16777216T", "0x10"})
        EXPECT_EQ(parse_byte_size(bad), std::nullopt) << bad;
}

/// Sets environment variables for one test and restores them after.
class DiskCacheEnvTest : public DiskCacheTest {
protected:
    void SetUp() override {
        DiskCacheTest::SetUp();
        for (const char *name :
             {"EMBER_CACHE_DIR", "XDG_CACHE_HOME", "HOME", "EMBER_DISABLE_CACHE",
              "EMBER_CACHE_MAX_BYTES"}) {
            const char *v = std::getenv(name);
            saved_[name] = v ? std::optional<std::string>(v) : std::nullopt;
            ::unsetenv(name);
        }
    }
    void TearDown() override {
        for (const auto &[name, value] : saved_) {
            if (value)
                ::setenv(name.c_str(), value->c_str(), 1);
            else
                ::unsetenv(name.c_str());
        }
        DiskCacheTest::TearDown();
    }
    std::map<std::string, std::optional<std::string>> saved_;
};

TEST_F(DiskCacheEnvTest, DirectoryChoice) {
    ::setenv("HOME", (root_ / "home").c_str(), 1);
    auto c = DiskCache::from_environment();
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->directory(), root_ / "home" / ".cache" / "ember");
    EXPECT_TRUE(fs::is_directory(c->directory()));
    EXPECT_EQ(c->max_bytes(), DiskCache::kDefaultMaxBytes);

    ::setenv("XDG_CACHE_HOME", "relative/xdg", 1); // ignored, as the XDG spec says
    EXPECT_EQ(DiskCache::from_environment()->directory(), root_ / "home" / ".cache" / "ember");
    ::setenv("XDG_CACHE_HOME", (root_ / "xdg").c_str(), 1);
    EXPECT_EQ(DiskCache::from_environment()->directory(), root_ / "xdg" / "ember");
    ::setenv("EMBER_CACHE_DIR", (root_ / "mine").c_str(), 1);
    EXPECT_EQ(DiskCache::from_environment()->directory(), root_ / "mine");
}

TEST_F(DiskCacheEnvTest, NoHomeOrUncreatableDirectoryIsOffWithAWarning) {
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(DiskCache::from_environment(), nullptr);
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("the disk cache is off"), std::string::npos) << err;

    write_file(root_ / "file", "x");
    ::setenv("EMBER_CACHE_DIR", (root_ / "file" / "sub").c_str(), 1);
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(DiskCache::from_environment(), nullptr);
    err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("cannot create the cache directory " + (root_ / "file" / "sub").string()),
              std::string::npos)
        << err;
    EXPECT_NE(err.find("the disk cache is off"), std::string::npos) << err;
}

TEST_F(DiskCacheEnvTest, DisableCache) {
    ::setenv("EMBER_CACHE_DIR", dir_.c_str(), 1);
    for (const char *on : {"1", "true", "yes", "on"}) {
        ::setenv("EMBER_DISABLE_CACHE", on, 1);
        EXPECT_EQ(DiskCache::from_environment(), nullptr) << on;
    }
    for (const char *off : {"0", "false", "", "off"}) {
        ::setenv("EMBER_DISABLE_CACHE", off, 1);
        EXPECT_NE(DiskCache::from_environment(), nullptr) << off;
    }
    ::setenv("EMBER_DISABLE_CACHE", "maybe", 1);
    ::testing::internal::CaptureStderr();
    EXPECT_NE(DiskCache::from_environment(), nullptr);
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("EMBER_DISABLE_CACHE='maybe'"), std::string::npos) << err;
}

TEST_F(DiskCacheEnvTest, MaxBytes) {
    ::setenv("EMBER_CACHE_DIR", dir_.c_str(), 1);
    ::setenv("EMBER_CACHE_MAX_BYTES", "64M", 1);
    EXPECT_EQ(DiskCache::from_environment()->max_bytes(), uint64_t(64) << 20);
    for (const char *bad : {"lots", "0", "1.5G"}) {
        ::setenv("EMBER_CACHE_MAX_BYTES", bad, 1);
        ::testing::internal::CaptureStderr();
        auto c = DiskCache::from_environment();
        std::string err = ::testing::internal::GetCapturedStderr();
        ASSERT_NE(c, nullptr);
        EXPECT_EQ(c->max_bytes(), DiskCache::kDefaultMaxBytes) << bad;
        EXPECT_NE(err.find("EMBER_CACHE_MAX_BYTES='" + std::string(bad) + "'"), std::string::npos)
            << err;
        EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    }
}

} // namespace
} // namespace ember::detail

namespace ember::detail {
namespace {

// instance() is configured once per process, so each case runs in a fresh process (a death test
// of the "threadsafe" style re-executes the test binary).
int instance_from_threads(const std::filesystem::path &expected_dir) {
    std::vector<std::thread> threads;
    std::vector<DiskCache *> seen(8, nullptr);
    for (int t = 0; t < 8; ++t)
        threads.emplace_back([&seen, t] { seen[t] = DiskCache::instance(); });
    for (auto &th : threads)
        th.join();
    for (DiskCache *c : seen)
        if (c != seen[0])
            return 1;
    if (expected_dir.empty())
        return seen[0] == nullptr ? 0 : 2;
    if (!seen[0] || seen[0]->directory() != expected_dir || seen[0]->max_bytes() != (3u << 20))
        return 3;
    seen[0]->store("abc", "ptx", "payload");
    return seen[0]->load("abc", "ptx") == "payload" ? 0 : 4;
}

TEST_F(DiskCacheEnvTest, InstanceIsConfiguredOnceFromTheEnvironment) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(
        {
            ::setenv("EMBER_CACHE_DIR", dir_.c_str(), 1);
            ::setenv("EMBER_CACHE_MAX_BYTES", "3M", 1);
            int rc = instance_from_threads(dir_);
            std::filesystem::remove_all(root_); // this process's own fixture directory
            std::exit(rc);
        },
        ::testing::ExitedWithCode(0), "");
    EXPECT_EXIT(
        {
            ::setenv("EMBER_CACHE_DIR", dir_.c_str(), 1);
            ::setenv("EMBER_DISABLE_CACHE", "1", 1);
            int rc = instance_from_threads({});
            std::filesystem::remove_all(root_);
            std::exit(rc);
        },
        ::testing::ExitedWithCode(0), "");
}

} // namespace
} // namespace ember::detail
