/// \file
/// Runs the test binary again as a child process with one test selected and an environment of the
/// caller's choosing: how the tests of a fresh process (the disk cache's warm start, the preload,
/// EMBER_TRACE at exit, IPC handles) start their other side.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern char **environ;

namespace ember::testing {

struct ChildResult {
    int status = -1; ///< exit status; 128 + signal when killed; -1 when it could not start
    pid_t pid = 0;   ///< its process id (0 when it could not start)
    std::string err; ///< its stderr, when `err_file` was given
};

/// Runs this binary with `--gtest_filter=<test>` and this process's environment, less every
/// variable that starts with one of `drop` (e.g. "EMBER_LOG="), plus `add` ("NAME=value" each).
/// Its stdout goes to /dev/null when `err_file` is set; its stderr goes to `err_file`, is read
/// back into the result and the file removed. Without `err_file` both streams are inherited.
inline ChildResult run_self(const std::string &test, const std::vector<std::string> &drop,
                            const std::vector<std::string> &add,
                            const std::filesystem::path &err_file = {}) {
    ChildResult r;
    char exe[4096];
    const ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) return r;
    exe[len] = '\0';
    std::vector<std::string> env_strings;
    for (char **e = environ; *e; ++e) {
        const std::string s(*e);
        bool dropped = false;
        for (const std::string &name : drop) dropped = dropped || s.rfind(name, 0) == 0;
        if (!dropped) env_strings.push_back(s);
    }
    env_strings.insert(env_strings.end(), add.begin(), add.end());
    std::vector<char *> envp;
    for (std::string &s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (!err_file.empty()) {
        posix_spawn_file_actions_addopen(&actions, 2, err_file.c_str(),
                                         O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    }
    std::string filter = "--gtest_filter=" + test;
    char *argv[] = {exe, filter.data(), nullptr};
    const int rc = posix_spawn(&r.pid, exe, &actions, nullptr, argv, envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
        r.pid = 0;
        return r;
    }
    int status = 0;
    if (waitpid(r.pid, &status, 0) != r.pid) return r;
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (!err_file.empty()) {
        std::ifstream in(err_file);
        std::stringstream ss;
        ss << in.rdbuf();
        r.err = ss.str();
        in.close();
        std::filesystem::remove(err_file);
    }
    return r;
}

} // namespace ember::testing
