/// \file
/// Reading and writing the files a user names: textual IR given to ember-compile, the files of
/// a repro bundle, -o outputs and dumps. Every read is of a regular file and bounded; every write
/// is checked to the end (close included). Failures are `LogicError`s naming the path and why.
#ifndef EMBER_COMPILER_FILEIO_H
#define EMBER_COMPILER_FILEIO_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ember {

/// The largest file ember reads whole from a path the user gives (256 MiB): textual IR for
/// ember-compile (also on stdin) and each file of a repro bundle.
inline constexpr uint64_t max_input_file_bytes = uint64_t(256) << 20;

/// The contents of the file `path` (symbolic links followed). Throws `LogicError` naming `path`
/// and the reason when it does not exist or cannot be opened, is not a regular file (a directory,
/// a device such as /dev/zero, a FIFO, a socket), holds more than `max_bytes` bytes, or a read
/// fails. A FIFO or device is rejected without being read (opening it does not block).
std::string read_regular_file(const std::string &path, uint64_t max_bytes = max_input_file_bytes);

/// As `read_regular_file`, but returns `std::nullopt` when nothing exists at `path` (a dangling
/// symbolic link included); every other failure still throws.
std::optional<std::string> read_regular_file_if_exists(const std::string &path,
                                                       uint64_t max_bytes = max_input_file_bytes);

/// The rest of the open file descriptor `fd` (e.g. 0, stdin) up to its end, `name` naming it in
/// errors (`<stdin>`). Throws `LogicError` when it is a directory, a read fails, or it holds more
/// than `max_bytes` bytes (so `< /dev/zero` stops with an error after `max_bytes`).
std::string read_descriptor(int fd, const std::string &name, uint64_t max_bytes = max_input_file_bytes);

/// Creates or truncates `path` and writes `bytes` to it, checking every write and the close.
/// Throws `LogicError` naming `path` and the reason (e.g. "No space left on device").
void write_whole_file(const std::string &path, std::string_view bytes);

/// Writes `bytes` to the open file descriptor `fd` (e.g. 1, stdout), retrying short writes;
/// throws `LogicError` naming `name` and the reason when a write fails.
void write_descriptor(int fd, const std::string &name, std::string_view bytes);

/// How many dump files (EMBER_DUMP stages written to EMBER_DUMP_DIR, repro bundles written for
/// EMBER_DUMP=bundle) this process failed to write. Each failure also prints a warning naming the
/// file; a tool (ember-compile) exits non-zero when this is not 0.
uint64_t dump_write_failures() noexcept;

namespace detail {
/// Counts one failed dump write (see dump_write_failures).
void note_dump_write_failure() noexcept;
} // namespace detail

} // namespace ember

#endif // EMBER_COMPILER_FILEIO_H
