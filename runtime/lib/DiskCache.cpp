/// \file
/// The disk store of the compile cache: see [Note] Disk cache entries in DiskCache.h and the
/// "Disk cache" section of docs/cache.md.
///
/// Entry file `<key>.<kind>`, little-endian:
///   offset  0  7 bytes  magic "EMBERC\0"
///   offset  7  1 byte   0 (reserved)
///   offset  8  u32      format version (DiskCache::kFormatVersion)
///   offset 12  u16      kind length
///   offset 14  u16      key length
///   offset 16  u64      payload size
///   offset 24  u64      payload checksum (checksum64, XXH64 seed 0)
///   offset 32  u64      header checksum (checksum64 of bytes 0..31, kind and key)
///   offset 40           kind bytes, key bytes, payload
/// The file size must be exactly 40 + kind + key + payload: anything else is a truncated entry or
/// one with trailing bytes.
///
/// Choices and their reasons:
/// - No fsync before the rename. A process that dies mid-write leaves only its temporary file
///   (removed by the next eviction scan once stale); a power loss can leave an entry of zeros or a
///   short one, which the size and checksum checks turn into a warning and a recompile. An fsync
///   per stored kernel would cost milliseconds on ordinary disks for no gain in correctness.
/// - Directories are created 0700: the cache holds code that processes load and run, so other
///   users must be able neither to plant nor to read entries (the XDG base directory spec asks
///   for 0700 too). Existing directories are left as they are, so a shared EMBER_CACHE_DIR set up
///   by its owner keeps its permissions.
/// - Recency: a hit sets the entry's mtime to now (futimens on the open file) when it is a minute
///   old or more (as relatime does for atime; the metadata write costs a warm start about 2 us);
///   a store makes a new file, whose mtime is now. Eviction removes the oldest mtimes first.
/// - Reads: an entry up to 1 MiB (every PTX, object and cubin of a kernel) is read with one pread
///   and checked in memory; a larger file header first, so a foreign file of gigabytes costs one
///   read of 40 bytes.
/// - Eviction scans the directory after each store (one readdir and one stat per file). Stores
///   happen once per compile, which costs milliseconds, and a cache holds hundreds of entries, not
///   millions, so a scan is cheaper than keeping a size estimate right across processes.
#include "DiskCache.h"

#include "ember/Error.h"
#include "ember/compiler/Settings.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <system_error>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ember::detail {

namespace {

constexpr char kMagic[7] = {'E', 'M', 'B', 'E', 'R', 'C', '\0'};
/// Temporary files older than this are left-overs of dead processes, removed by eviction scans.
constexpr int64_t kStaleTempSeconds = 3600;

// ---- XXH64 ------------------------------------------------------------------------------------

constexpr uint64_t P1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t P2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t P3 = 0x165667B19E3779F9ull;
constexpr uint64_t P4 = 0x85EBCA77C2B2AE63ull;
constexpr uint64_t P5 = 0x27D4EB2F165667C5ull;

inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline uint64_t read64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i)
        v = (v << 8) | p[i];
    return v;
}
inline uint32_t read32(const unsigned char *p) {
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
inline uint64_t xxh_round(uint64_t acc, uint64_t input) {
    acc += input * P2;
    acc = rotl(acc, 31);
    return acc * P1;
}
inline uint64_t xxh_merge(uint64_t acc, uint64_t val) {
    acc ^= xxh_round(0, val);
    return acc * P1 + P4;
}

// ---- little-endian header fields --------------------------------------------------------------

void put_le(unsigned char *p, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i)
        p[i] = static_cast<unsigned char>(v >> (8 * i));
}
uint64_t get_le(const unsigned char *p, int bytes) {
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i)
        v = (v << 8) | p[i];
    return v;
}

bool valid_token(std::string_view s, size_t max_len) {
    if (s.empty() || s.size() > max_len)
        return false;
    for (char c : s) {
        bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  c == '_' || c == '-';
        if (!ok)
            return false;
    }
    return true;
}

/// Whether a directory entry's name is that of a cache entry: `<key>.<kind>`, both valid.
bool is_entry_name(std::string_view name) {
    size_t dot = name.find('.');
    if (dot == std::string_view::npos || name.find('.', dot + 1) != std::string_view::npos)
        return false;
    return valid_token(name.substr(0, dot), DiskCache::kMaxKeyLength) &&
           valid_token(name.substr(dot + 1), DiskCache::kMaxKindLength);
}

/// Whether a name is that of one of our temporary files: `<key>.<kind>.tmp.<pid>.<random>`.
bool is_temp_name(std::string_view name) {
    size_t at = name.find(".tmp.");
    return at != std::string_view::npos && is_entry_name(name.substr(0, at));
}

/// One line on stderr, as one write so that lines of several threads or processes do not mix.
void warn_line(const std::string &line) {
    std::string s = line;
    s += '\n';
    std::fwrite(s.data(), 1, s.size(), stderr);
    std::fflush(stderr);
}

void warn_bad_entry(const std::filesystem::path &file, const std::string &what) {
    warn_line("ember: cache: " + file.string() + ": " + what + "; recompiling");
}

std::string errno_text(int err) { return std::generic_category().message(err); }

/// mkdir -p, creating missing components with mode 0700. Returns 0 or an errno value.
int make_directories(const std::filesystem::path &dir) {
    std::filesystem::path partial;
    for (const auto &part : dir) {
        partial /= part;
        if (partial.empty() || partial == partial.root_path())
            continue;
        if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST)
            return errno;
    }
    struct stat st;
    if (::stat(dir.c_str(), &st) != 0)
        return errno;
    return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
}

bool write_all(int fd, const char *p, size_t size) {
    while (size > 0) {
        ssize_t n = ::write(fd, p, size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EIO;
            return false;
        }
        p += n;
        size -= static_cast<size_t>(n);
    }
    return true;
}

/// A name no other thread or process uses at the same time: pid, a per-process counter and 64
/// random bits (the pid alone repeats across pid namespaces sharing one cache directory).
std::string temp_suffix() {
    static std::atomic<uint64_t> counter{0};
    thread_local std::mt19937_64 rng{std::random_device{}()};
    char buf[80];
    std::snprintf(buf, sizeof buf, ".tmp.%ld.%llx%llx", static_cast<long>(::getpid()),
                  static_cast<unsigned long long>(counter.fetch_add(1, std::memory_order_relaxed)),
                  static_cast<unsigned long long>(rng()));
    return buf;
}

std::string header_for(std::string_view key, std::string_view kind, std::string_view payload) {
    std::string h(DiskCache::kHeaderFixedBytes, '\0');
    auto *p = reinterpret_cast<unsigned char *>(h.data());
    std::memcpy(p, kMagic, sizeof kMagic);
    p[7] = 0;
    put_le(p + 8, DiskCache::kFormatVersion, 4);
    put_le(p + 12, kind.size(), 2);
    put_le(p + 14, key.size(), 2);
    put_le(p + 16, payload.size(), 8);
    put_le(p + 24, checksum64(payload), 8);
    h.append(kind);
    h.append(key);
    // Header checksum: over bytes 0..31, kind and key (the checksum field itself is at 32..39).
    std::string covered = h.substr(0, 32) + std::string(kind) + std::string(key);
    put_le(reinterpret_cast<unsigned char *>(h.data()) + 32, checksum64(covered), 8);
    return h;
}

/// Reads `size` bytes at `offset` of `fd` into `out`; false on an error or a short file.
bool read_at(int fd, std::string &out, size_t size, uint64_t offset) {
    out.resize(size);
    size_t done = 0;
    while (done < size) {
        ssize_t n = ::pread(fd, out.data() + done, size - done, static_cast<off_t>(offset + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        done += static_cast<size_t>(n);
    }
    return true;
}

/// Files up to this size are read with one pread (a kernel's PTX, object or cubin is kilobytes);
/// larger ones header first, so that a foreign file of gigabytes costs one read of 40 bytes.
constexpr uint64_t kWholeReadBytes = uint64_t(1) << 20;
/// A load renews an entry's mtime when it is at least this old.
constexpr time_t kRecencySeconds = 60;

/// Reads the entry (key, kind) from `fd`, a file of `size` bytes, checking every field before it
/// trusts it. Returns what is wrong, or empty with the payload in `payload`.
std::string read_entry(int fd, uint64_t size, std::string_view key, std::string_view kind,
                       std::string &payload) {
    std::string whole;
    if (size <= kWholeReadBytes && !read_at(fd, whole, static_cast<size_t>(size), 0))
        return "cannot read the entry (the file changed while being read?)";
    // Bytes [offset, offset + n) of the file: from `whole`, or read now.
    auto fetch = [&](std::string &out, size_t n, uint64_t offset) {
        if (size > kWholeReadBytes) return read_at(fd, out, n, offset);
        if (offset + n > whole.size()) return false;
        out.assign(whole, static_cast<size_t>(offset), n);
        return true;
    };
    const size_t fixed = DiskCache::kHeaderFixedBytes;
    std::string head;
    if (!fetch(head, static_cast<size_t>(std::min<uint64_t>(size, fixed)), 0))
        return "cannot read the header (the file changed while being read?)";
    const auto *p = reinterpret_cast<const unsigned char *>(head.data());
    if (head.size() >= sizeof kMagic && std::memcmp(p, kMagic, sizeof kMagic) != 0)
        return "not an ember cache entry (wrong magic)";
    if (head.size() < fixed)
        return "truncated header (" + std::to_string(head.size()) + " of at least " +
               std::to_string(fixed) + " bytes)";
    if (p[7] != 0)
        return "not an ember cache entry (wrong magic)";
    uint64_t version = get_le(p + 8, 4);
    if (version != DiskCache::kFormatVersion)
        return "format version " + std::to_string(version) + ", expected " +
               std::to_string(DiskCache::kFormatVersion);
    size_t kind_len = get_le(p + 12, 2), key_len = get_le(p + 14, 2);
    uint64_t payload_size = get_le(p + 16, 8), payload_sum = get_le(p + 24, 8);
    uint64_t header_size = fixed + kind_len + key_len;
    if (size < header_size)
        return "truncated header (" + std::to_string(size) + " of " + std::to_string(header_size) +
               " bytes)";
    std::string names;
    if (!fetch(names, kind_len + key_len, fixed))
        return "cannot read the header (the file changed while being read?)";
    if (checksum64(head.substr(0, 32) + names) != get_le(p + 32, 8))
        return "header checksum mismatch";
    std::string_view stored_kind = std::string_view(names).substr(0, kind_len);
    std::string_view stored_key = std::string_view(names).substr(kind_len);
    if (stored_kind != kind)
        return "holds kind '" + std::string(stored_kind) + "', expected '" + std::string(kind) + "'";
    if (stored_key != key)
        return "holds key '" + std::string(stored_key) + "', expected '" + std::string(key) + "'";
    uint64_t have = size - header_size;
    if (have < payload_size)
        return "truncated payload (" + std::to_string(have) + " of " +
               std::to_string(payload_size) + " bytes)";
    if (have > payload_size)
        return std::to_string(have - payload_size) + " bytes after the payload of " +
               std::to_string(payload_size) + " bytes";
    if (size <= kWholeReadBytes) {
        whole.erase(0, static_cast<size_t>(header_size));
        payload = std::move(whole);
    } else if (!read_at(fd, payload, static_cast<size_t>(payload_size), header_size)) {
        return "cannot read the payload of " + std::to_string(payload_size) + " bytes";
    }
    if (checksum64(payload) != payload_sum)
        return "payload checksum mismatch";
    return {};
}

struct ListedEntry {
    std::string name;
    uint64_t size;
    struct timespec mtime;
};

/// The entries of `dir`; with `clean`, removes stale temporary files on the way.
std::vector<ListedEntry> list_entries(const std::filesystem::path &dir, bool clean) {
    std::vector<ListedEntry> out;
    DIR *d = ::opendir(dir.c_str());
    if (!d)
        return out;
    int dfd = ::dirfd(d);
    auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    while (struct dirent *e = ::readdir(d)) {
        std::string_view name = e->d_name;
        bool entry = is_entry_name(name);
        bool temp = !entry && is_temp_name(name);
        if (!entry && !temp)
            continue;
        struct stat st;
        if (::fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue; // vanished (another process evicted it) or not ours
        if (temp) {
            if (clean && now - st.st_mtim.tv_sec > kStaleTempSeconds)
                ::unlinkat(dfd, e->d_name, 0);
            continue;
        }
        out.push_back({std::string(name), static_cast<uint64_t>(st.st_size), st.st_mtim});
    }
    ::closedir(d);
    return out;
}

bool older(const ListedEntry &a, const ListedEntry &b) {
    if (a.mtime.tv_sec != b.mtime.tv_sec)
        return a.mtime.tv_sec < b.mtime.tv_sec;
    if (a.mtime.tv_nsec != b.mtime.tv_nsec)
        return a.mtime.tv_nsec < b.mtime.tv_nsec;
    return a.name < b.name;
}

const char *env(const char *name) {
    const char *v = std::getenv(name);
    return v && *v ? v : nullptr;
}

} // namespace

uint64_t checksum64(std::string_view bytes) noexcept {
    const auto *p = reinterpret_cast<const unsigned char *>(bytes.data());
    const unsigned char *end = p + bytes.size();
    const uint64_t len = bytes.size();
    uint64_t h;
    if (len >= 32) {
        uint64_t v1 = P1 + P2, v2 = P2, v3 = 0, v4 = 0 - P1;
        const unsigned char *limit = end - 32;
        do {
            v1 = xxh_round(v1, read64(p));
            v2 = xxh_round(v2, read64(p + 8));
            v3 = xxh_round(v3, read64(p + 16));
            v4 = xxh_round(v4, read64(p + 24));
            p += 32;
        } while (p <= limit);
        h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
        h = xxh_merge(h, v1);
        h = xxh_merge(h, v2);
        h = xxh_merge(h, v3);
        h = xxh_merge(h, v4);
    } else {
        h = P5;
    }
    h += len;
    while (p + 8 <= end) {
        h ^= xxh_round(0, read64(p));
        h = rotl(h, 27) * P1 + P4;
        p += 8;
    }
    if (p + 4 <= end) {
        h ^= uint64_t(read32(p)) * P1;
        h = rotl(h, 23) * P2 + P3;
        p += 4;
    }
    while (p < end) {
        h ^= uint64_t(*p) * P5;
        h = rotl(h, 11) * P1;
        ++p;
    }
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= P3;
    h ^= h >> 32;
    return h;
}

std::optional<uint64_t> parse_byte_size(std::string_view text) {
    size_t i = 0;
    uint64_t value = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
        uint64_t digit = static_cast<uint64_t>(text[i] - '0');
        if (value > (UINT64_MAX - digit) / 10)
            return std::nullopt;
        value = value * 10 + digit;
        ++i;
    }
    if (i == 0)
        return std::nullopt;
    std::string_view rest = text.substr(i);
    int shift = 0;
    if (!rest.empty()) {
        switch (rest[0]) {
        case 'k': case 'K': shift = 10; break;
        case 'm': case 'M': shift = 20; break;
        case 'g': case 'G': shift = 30; break;
        case 't': case 'T': shift = 40; break;
        default: break;
        }
        if (shift != 0)
            rest.remove_prefix(1);
        if (rest == "B" || rest == "b" || (shift != 0 && (rest == "iB" || rest == "ib")))
            rest = {};
        if (!rest.empty())
            return std::nullopt;
    }
    if (shift != 0 && value > (UINT64_MAX >> shift))
        return std::nullopt;
    return value << shift;
}

DiskCache::DiskCache(std::filesystem::path dir, uint64_t max_bytes)
    : dir_(std::move(dir)), max_bytes_(max_bytes) {
    if (int err = make_directories(dir_))
        throw RuntimeError("ember: cache: cannot create the cache directory " + dir_.string() + ": " +
                           errno_text(err));
}

std::unique_ptr<DiskCache> DiskCache::from_environment() {
    if (settings::flag("EMBER_DISABLE_CACHE", false)) return nullptr;
    std::filesystem::path dir;
    if (const std::optional<std::string> d = settings::text("EMBER_CACHE_DIR"))
        dir = *d;
    else if (const char *x = env("XDG_CACHE_HOME"); x && x[0] == '/') // the XDG spec ignores relative paths
        dir = std::filesystem::path(x) / "ember";
    else if (const char *h = env("HOME"))
        dir = std::filesystem::path(h) / ".cache" / "ember";
    else {
        warn_line("ember: cache: neither EMBER_CACHE_DIR, XDG_CACHE_HOME nor HOME is set; the disk "
                  "cache is off");
        return nullptr;
    }
    uint64_t max = kDefaultMaxBytes;
    if (const std::optional<std::string> m = settings::text("EMBER_CACHE_MAX_BYTES")) {
        std::optional<uint64_t> parsed = parse_byte_size(*m);
        if (!parsed || *parsed == 0)
            settings::warn("EMBER_CACHE_MAX_BYTES", *m, "not a size, the cache is capped at 1G");
        else
            max = *parsed;
    }
    try {
        return std::make_unique<DiskCache>(std::move(dir), max);
    } catch (const Error &e) {
        warn_line(std::string(e.what()) + "; the disk cache is off");
        return nullptr;
    }
}

DiskCache *DiskCache::instance() {
    // Never destroyed: a compile on another thread during exit may still use it.
    static DiskCache *cache = from_environment().release();
    return cache;
}

std::filesystem::path DiskCache::entry_path(std::string_view key, std::string_view kind) const {
    if (!valid_token(key, kMaxKeyLength))
        throw LogicError("DiskCache: key '" + std::string(key) + "' must be 1 to " +
                         std::to_string(kMaxKeyLength) + " characters of [0-9a-zA-Z_-]");
    if (!valid_token(kind, kMaxKindLength))
        throw LogicError("DiskCache: kind '" + std::string(kind) + "' must be 1 to " +
                         std::to_string(kMaxKindLength) + " characters of [0-9a-zA-Z_-]");
    std::string name;
    name.reserve(key.size() + 1 + kind.size());
    name.append(key).append(".").append(kind);
    return dir_ / name;
}

std::optional<std::string> DiskCache::load(std::string_view key, std::string_view kind) {
    std::filesystem::path file = entry_path(key, kind);
    // O_NONBLOCK: a FIFO under the entry's name must not hang the load (it is then "not a regular
    // file"); regular files ignore the flag.
    int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        if (errno != ENOENT && errno != ENOTDIR)
            warn_line("ember: cache: " + file.string() + ": cannot open: " + errno_text(errno) +
                      "; recompiling");
        return std::nullopt;
    }
    struct stat st {};
    std::string payload, problem;
    bool stated = ::fstat(fd, &st) == 0;
    if (!stated)
        problem = "cannot stat: " + errno_text(errno);
    else if (!S_ISREG(st.st_mode))
        problem = "not a regular file";
    else
        problem = read_entry(fd, static_cast<uint64_t>(st.st_size), key, kind, payload);
    if (problem.empty()) {
        // Recency for eviction, to the minute (as relatime does for atime): an entry used less
        // than a minute ago is recent already, and its futimens (a metadata write) is skipped.
        // A failure only costs LRU accuracy.
        struct timespec now {};
        ::clock_gettime(CLOCK_REALTIME, &now);
        if (now.tv_sec - st.st_mtim.tv_sec >= kRecencySeconds || now.tv_sec < st.st_mtim.tv_sec)
            ::futimens(fd, nullptr);
        ::close(fd);
        return payload;
    }
    warn_bad_entry(file, problem);
    // Remove the bad file, unless another process has meanwhile renamed a good entry over it.
    struct stat now;
    if (stated && ::stat(file.c_str(), &now) == 0 && now.st_ino == st.st_ino &&
        now.st_dev == st.st_dev)
        ::unlink(file.c_str());
    ::close(fd);
    return std::nullopt;
}

bool DiskCache::remove(std::string_view key, std::string_view kind) {
    std::filesystem::path file = entry_path(key, kind);
    return ::unlink(file.c_str()) == 0;
}

void DiskCache::store(std::string_view key, std::string_view kind, std::string_view payload) {
    std::filesystem::path file = entry_path(key, kind);
    std::string header = header_for(key, kind, payload);
    uint64_t entry_bytes = header.size() + payload.size();
    if (entry_bytes > max_bytes_) {
        warn_line("ember: cache: " + file.string() + ": the entry of " + std::to_string(entry_bytes) +
                  " bytes exceeds EMBER_CACHE_MAX_BYTES (" + std::to_string(max_bytes_) +
                  "); not stored");
        return;
    }
    std::filesystem::path temp = file;
    temp += temp_suffix();
    int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno == ENOENT && make_directories(dir_) == 0) // the directory was removed
        fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        warn_line("ember: cache: " + temp.string() + ": cannot create: " + errno_text(errno) +
                  "; not stored");
        return;
    }
    bool ok = write_all(fd, header.data(), header.size()) &&
              write_all(fd, payload.data(), payload.size());
    int err = ok ? 0 : errno;
    if (::close(fd) != 0 && ok) {
        ok = false;
        err = errno;
    }
    if (ok && ::rename(temp.c_str(), file.c_str()) != 0) {
        ok = false;
        err = errno;
    }
    if (!ok) {
        ::unlink(temp.c_str());
        warn_line("ember: cache: " + file.string() + ": cannot write: " + errno_text(err) +
                  "; not stored");
        return;
    }
    evict(file.filename().string());
}

uint64_t DiskCache::size_bytes() const {
    uint64_t total = 0;
    for (const ListedEntry &e : list_entries(dir_, false))
        total += e.size;
    return total;
}

void DiskCache::evict(const std::string &keep) {
    std::vector<ListedEntry> entries = list_entries(dir_, true);
    uint64_t total = 0;
    for (const ListedEntry &e : entries)
        total += e.size;
    if (total <= max_bytes_)
        return;
    std::sort(entries.begin(), entries.end(), older);
    for (const ListedEntry &e : entries) {
        if (total <= max_bytes_)
            break;
        if (e.name == keep)
            continue;
        // ENOENT: another process evicted it first; its bytes are gone either way.
        if (::unlink((dir_ / e.name).c_str()) == 0 || errno == ENOENT)
            total -= e.size;
    }
}

} // namespace ember::detail
