/// \file
/// EMBER_DUMP=sass: the machine code (SASS) the driver builds from a kernel's PTX, for people who
/// read what really runs. The driver has no disassembler: the PTX is linked into a cubin with
/// cuLink* (what the image cache does), and the cubin is handed to the CUDA toolkit's
/// `cuobjdump -sass` (or `nvdisasm -c`) when one is installed. Neither is needed to build or run
/// ember: without them the stage is skipped with one warning per process.
#include "cuda/CudaBackend.h"
#include "cuda/CudaSass.h"

#include "ember/compiler/Compiler.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <iostream>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

extern char **environ;

namespace ember::detail {

namespace {

bool executable(const std::filesystem::path &p) {
    std::error_code ec;
    return std::filesystem::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

/// Runs `argv` with stdout and stderr captured (stdin from /dev/null). Returns the exit status
/// (-1 when it could not be started, `why` set).
int run_captured(const std::vector<std::string> &argv, std::string &out, std::string &err, std::string &why) {
    int out_pipe[2], err_pipe[2];
    if (::pipe(out_pipe) != 0) {
        why = std::string("pipe: ") + std::strerror(errno);
        return -1;
    }
    if (::pipe(err_pipe) != 0) {
        why = std::string("pipe: ") + std::strerror(errno);
        ::close(out_pipe[0]);
        ::close(out_pipe[1]);
        return -1;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) posix_spawn_file_actions_addclose(&actions, fd);
    std::vector<char *> args;
    for (const std::string &a : argv) args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = 0;
    const int rc = ::posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    if (rc != 0) {
        why = "cannot run '" + argv[0] + "': " + std::strerror(rc);
        ::close(out_pipe[0]);
        ::close(err_pipe[0]);
        return -1;
    }
    // stderr is read after stdout: a tool that fills the stderr pipe (64 KiB) while stdout is
    // open would block, but the disassemblers write a few lines there at most.
    char buf[65536];
    for (auto [fd, dst] : {std::pair<int, std::string *>{out_pipe[0], &out}, {err_pipe[0], &err}}) {
        for (;;) {
            const ssize_t n = ::read(fd, buf, sizeof buf);
            if (n > 0) {
                dst->append(buf, size_t(n));
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            break;
        }
        ::close(fd);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/// Says `message` on stderr the first time only (one warning per process, not one per kernel).
void warn_once(std::atomic<bool> &said, const std::string &message) {
    if (!said.exchange(true)) std::cerr << "ember: warning: EMBER_DUMP=sass: " + message + "\n";
}

} // namespace

std::optional<std::string> find_cuda_tool(const std::string &name) {
    std::vector<std::filesystem::path> dirs;
    if (const char *path = std::getenv("PATH")) {
        std::string_view rest(path);
        while (!rest.empty()) {
            const size_t colon = rest.find(':');
            std::string_view dir = rest.substr(0, colon);
            if (!dir.empty()) dirs.emplace_back(std::string(dir));
            rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
        }
    }
    // The toolkit's usual homes, for a toolkit installed but not on the PATH.
    for (const char *var : {"CUDA_HOME", "CUDA_PATH"})
        if (const char *v = std::getenv(var); v && *v) dirs.push_back(std::filesystem::path(v) / "bin");
    dirs.emplace_back("/usr/local/cuda/bin");
    for (const std::filesystem::path &d : dirs)
        if (executable(d / name)) return (d / name).string();
    return std::nullopt;
}

std::optional<std::string> disassemble_cubin(const std::string &cubin, std::string &why) {
    std::vector<std::string> argv;
    if (std::optional<std::string> tool = find_cuda_tool("cuobjdump")) {
        argv = {*tool, "-sass"};
    } else if (std::optional<std::string> tool = find_cuda_tool("nvdisasm")) {
        argv = {*tool, "-c"};
    } else {
        why = "neither cuobjdump nor nvdisasm (CUDA toolkit) is on the PATH, in $CUDA_HOME/bin or in "
              "/usr/local/cuda/bin";
        return std::nullopt;
    }
    const char *tmp = std::getenv("TMPDIR");
    std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/ember-sass-XXXXXX";
    const int fd = ::mkstemp(path.data());
    if (fd < 0) {
        why = "cannot create a temporary file '" + path + "': " + std::strerror(errno);
        return std::nullopt;
    }
    size_t written = 0;
    while (written < cubin.size()) {
        const ssize_t n = ::write(fd, cubin.data() + written, cubin.size() - written);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            why = "cannot write '" + path + "': " + std::strerror(errno);
            ::close(fd);
            ::unlink(path.c_str());
            return std::nullopt;
        }
        written += size_t(n);
    }
    ::close(fd);
    argv.push_back(path);
    std::string out, err;
    const int status = run_captured(argv, out, err, why);
    ::unlink(path.c_str());
    if (status < 0) return std::nullopt;
    if (status != 0) {
        while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
        why = "'" + argv[0] + "' exited with status " + std::to_string(status) + (err.empty() ? "" : ": " + err);
        return std::nullopt;
    }
    return out;
}

void CudaBackend::dump_sass(const CompiledKernel &k) {
    static std::atomic<bool> no_linker{false}, no_tool{false};
    if (drv_.is_hip()) return; // AMDGPU's `asm` stage is already the machine code
    std::string info_log;
    std::optional<std::string> cubin = link_image(k, info_log);
    if (!cubin) {
        warn_once(no_linker, "kernel '" + k.kernel_name + "': the CUDA driver did not link its PTX into a cubin" +
                                 (linker_available() ? "" : " (it has no cuLink* entry points)") +
                                 "; no SASS is dumped");
        return;
    }
    std::string why;
    std::optional<std::string> sass = disassemble_cubin(*cubin, why);
    if (!sass) {
        warn_once(no_tool, why + "; no SASS is dumped");
        return;
    }
    dump_stage_text(k, "sass", "sass", *sass);
}

} // namespace ember::detail
