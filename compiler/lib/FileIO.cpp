/// \file
/// Bounded reads of regular files and checked writes (ember/compiler/FileIO.h).
#include "ember/compiler/FileIO.h"

#include "ember/Error.h"

#include <atomic>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ember {

namespace {

std::atomic<uint64_t> dump_failures{0};

std::string quote(const std::string &path) { return "'" + path + "'"; }

std::string reason(int err) { return std::strerror(err); }

/// What a file that is not a regular file is, for messages.
const char *kind_of(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

std::string limit_text(uint64_t max_bytes) {
    std::string s = "the limit of " + std::to_string(max_bytes) + " bytes";
    if (max_bytes >= (uint64_t(1) << 20) && max_bytes % (uint64_t(1) << 20) == 0)
        s += " (" + std::to_string(max_bytes >> 20) + " MiB)";
    return s;
}

/// Closes `fd` when it goes out of scope (reads only: a write checks its close itself).
struct ReadFd {
    int fd;
    ~ReadFd() { ::close(fd); }
};

/// Reads `fd` to its end, at most `max_bytes`; `name` is quoted already.
std::string read_all(int fd, const std::string &name, uint64_t max_bytes, uint64_t size_hint) {
    std::string data;
    if (size_hint > 0 && size_hint <= max_bytes) data.reserve(static_cast<size_t>(size_hint));
    char buf[1 << 16];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw LogicError("cannot read " + name + ": " + reason(errno));
        }
        if (n == 0) return data;
        if (data.size() + static_cast<uint64_t>(n) > max_bytes)
            throw LogicError("cannot read " + name + ": it holds more than " + limit_text(max_bytes));
        data.append(buf, static_cast<size_t>(n));
    }
}

std::optional<std::string> read_file(const std::string &path, uint64_t max_bytes, bool missing_ok) {
    // O_NONBLOCK: opening a FIFO without a writer must not hang; it is rejected below anyway.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        const int err = errno;
        if (missing_ok && err == ENOENT) return std::nullopt;
        throw LogicError("cannot open " + quote(path) + ": " + reason(err));
    }
    ReadFd guard{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) throw LogicError("cannot read " + quote(path) + ": " + reason(errno));
    if (!S_ISREG(st.st_mode))
        throw LogicError("cannot read " + quote(path) + ": it is " + kind_of(st.st_mode) +
                         ", not a regular file");
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    if (size > max_bytes)
        throw LogicError("cannot read " + quote(path) + ": it holds " + std::to_string(size) +
                         " bytes, more than " + limit_text(max_bytes));
    return read_all(fd, quote(path), max_bytes, size);
}

} // namespace

std::string read_regular_file(const std::string &path, uint64_t max_bytes) {
    return *read_file(path, max_bytes, /*missing_ok=*/false);
}

std::optional<std::string> read_regular_file_if_exists(const std::string &path, uint64_t max_bytes) {
    return read_file(path, max_bytes, /*missing_ok=*/true);
}

std::string read_descriptor(int fd, const std::string &name, uint64_t max_bytes) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) throw LogicError("cannot read " + name + ": " + reason(errno));
    if (S_ISDIR(st.st_mode)) throw LogicError("cannot read " + name + ": it is a directory");
    if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > max_bytes)
        throw LogicError("cannot read " + name + ": it holds " + std::to_string(st.st_size) +
                         " bytes, more than " + limit_text(max_bytes));
    return read_all(fd, name, max_bytes, S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0);
}

void write_descriptor(int fd, const std::string &name, std::string_view bytes) {
    size_t off = 0;
    while (off < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw LogicError("cannot write to " + name + ": " + reason(errno));
        }
        off += static_cast<size_t>(n);
    }
}

void write_whole_file(const std::string &path, std::string_view bytes) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) throw LogicError("cannot open " + quote(path) + " for writing: " + reason(errno));
    try {
        write_descriptor(fd, quote(path), bytes);
    } catch (...) {
        ::close(fd);
        throw;
    }
    // A file system may report a failed write only at close (NFS, quotas).
    if (::close(fd) != 0) throw LogicError("cannot write to " + quote(path) + ": " + reason(errno));
}

uint64_t dump_write_failures() noexcept { return dump_failures.load(std::memory_order_relaxed); }

void detail::note_dump_write_failure() noexcept { dump_failures.fetch_add(1, std::memory_order_relaxed); }

} // namespace ember
