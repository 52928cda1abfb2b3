#include "ember/compiler/Log.h"
#include "ember/compiler/Settings.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace ember {

namespace {

constexpr unsigned kUnread = ~0u;
std::atomic<unsigned> g_topics{kUnread};

struct TopicName {
    std::string_view name;
    LogTopic topic;
};
constexpr TopicName kTopics[] = {{"cache", LogTopic::cache}, {"compile", LogTopic::compile},
                                   {"device", LogTopic::device}};

std::string_view name_of(LogTopic t) {
    for (const auto &n : kTopics)
        if (n.topic == t) return n.name;
    return "log";
}

unsigned parse(std::string_view list) {
    const std::string_view whole = list;
    unsigned mask = 0;
    std::string unknown;
    while (!list.empty()) {
        size_t comma = list.find(',');
        std::string_view item = list.substr(0, comma);
        list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
        while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
        while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
        if (item.empty()) continue;
        if (item == "all") {
            for (const auto &n : kTopics) mask |= static_cast<unsigned>(n.topic);
            continue;
        }
        bool known = false;
        for (const auto &n : kTopics)
            if (item == n.name) {
                mask |= static_cast<unsigned>(n.topic);
                known = true;
            }
        if (!known) unknown += (unknown.empty() ? "" : ", ") + std::string(item);
    }
    if (!unknown.empty()) settings::warn("EMBER_LOG", whole, "unknown topic(s) " + unknown + " ignored");
    return mask;
}

} // namespace

bool log_enabled(LogTopic t) noexcept {
    unsigned m = g_topics.load(std::memory_order_relaxed);
    if (m == kUnread) [[unlikely]] {
        const std::optional<std::string> env = settings::text("EMBER_LOG");
        unsigned parsed = env ? parse(*env) : 0;
        unsigned expected = kUnread;
        g_topics.compare_exchange_strong(expected, parsed, std::memory_order_relaxed);
        m = g_topics.load(std::memory_order_relaxed);
    }
    return (m & static_cast<unsigned>(t)) != 0;
}

void log_line(LogTopic t, std::string_view line) {
    std::string text = "ember[";
    text += name_of(t);
    text += "]: ";
    text += line;
    text += '\n';
    // One write(2), so that lines of concurrent threads and processes stay whole.
    size_t off = 0;
    while (off < text.size()) {
        ssize_t n = ::write(2, text.data() + off, text.size() - off);
        if (n <= 0) break;
        off += static_cast<size_t>(n);
    }
}

void set_log_topics(std::string_view list) { g_topics.store(parse(list), std::memory_order_relaxed); }

} // namespace ember
