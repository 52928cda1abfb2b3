/// \file
/// ember-difftest: random, well-defined kernels ([Note] Difftest kernels in Generator.h) run on
/// every device asked for and in the reference interpreter ([Note] Reference interpreter in
/// Interpreter.h), their output buffers compared bit for bit (NaNs of any payload equal).
///
///   ember-difftest --seed S --count N [--devices cpu,cuda] [--jobs J] [--repro-dir DIR]
///
/// The work is spread over J worker processes (forked before any device is opened; each kernel
/// is compiled through the runtime's public API, `load_module(ModuleImage::ember_ir(...))`), so a
/// kernel that crashes or hangs a worker is reported as such and the others go on. A
/// disagreement prints the seed, the kernel (minimised by deleting statements while the
/// disagreement stays), the inputs and outputs of the first thread that differs, and writes them
/// to DIR/difftest-<seed>.txt and the kernel to DIR/difftest-<seed>.ir. A kernel whose worker
/// crashed or hung gets DIR/crash-<seed>.txt (what happened, how to replay it) and the whole
/// kernel in DIR/crash-<seed>.ir. Exit status: 0 when everything agreed, 1 otherwise.
#include "Generator.h"
#include "Interpreter.h"
#include "SelfTest.h"

#include "ember/compiler/IRPrinter.h"
#include "ember/ember.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace ember::difftest {
namespace {

struct Options {
    uint64_t seed = 1, count = 100;
    std::vector<std::string> devices; ///< empty: cpu, and cuda when there is a GPU
    unsigned jobs = 1;
    std::string repro_dir = ".";
    bool minimise = true;
    unsigned timeout_s = 120; ///< per kernel, for a worker's silence
    GenerateOptions generate;
    /// Disagreements a worker minimises (the later ones are reported whole, which is faster).
    unsigned max_minimised = 5;
    /// Test hook of the tester itself: the worker aborts when it reaches this seed.
    std::optional<uint64_t> crash_on;
    /// --kernel FILE: this kernel (a repro's .ir, edited or not) instead of each seed's own; the
    /// seed still gives the launch and the inputs.
    std::string kernel_file, kernel_text;
};

[[noreturn]] void usage(const std::string &why) {
    std::fprintf(stderr,
                 "ember-difftest: %s\n"
                 "usage: ember-difftest [--seed S] [--count N] [--devices cpu,cuda] [--jobs J] [--repro-dir DIR]\n"
                 "                      [--no-minimise] [--minimise-at-most K] [--no-half-fma]\n"
                 "                      [--timeout SECONDS] [--print SEED] [--self-test]\n"
                 "                      [--kernel FILE]   (FILE's kernel, with the seed's launch and inputs)\n"
                 "                      [--crash-on SEED]   (a test of the tester: that seed's worker aborts)\n",
                 why.c_str());
    std::exit(2);
}

std::vector<std::string> split(const std::string &s, char sep) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string x;
    while (std::getline(ss, x, sep))
        if (!x.empty()) out.push_back(x);
    return out;
}

// ---------------------------------------------------------------------------------------------
// One kernel on one device or in the interpreter.

using Buffers = std::vector<std::vector<uint8_t>>;

struct Outcome {
    bool ok = false;
    std::string error; ///< when !ok
    Buffers buffers;
};

struct Case {
    uint64_t seed = 0;
    std::string name, text;
    uint64_t grid = 1, block = 1;
    Buffers inputs;
};

Case make_case(uint64_t seed, const GenerateOptions &options, const std::string &kernel_text = {}) {
    Generated g = generate(seed, options);
    Case c;
    c.seed = seed;
    c.name = g.kernel.name;
    c.text = ir::print(g.kernel);
    if (!kernel_text.empty()) {
        const ir::Module m = ir::parse_module(kernel_text, "--kernel");
        if (m.kernels.size() != 1) throw std::runtime_error("--kernel: the file must hold one kernel");
        if (m.kernels[0].params.size() != g.kernel.params.size())
            throw std::runtime_error("--kernel: kernel '" + m.kernels[0].name + "' has " +
                                     std::to_string(m.kernels[0].params.size()) + " parameters, the tester passes " +
                                     std::to_string(g.kernel.params.size()));
        c.name = m.kernels[0].name;
        c.text = ir::print(m);
    }
    c.grid = g.grid;
    c.block = g.block;
    c.inputs = make_inputs(seed, g.grid * g.block);
    return c;
}

Outcome run_interpreter(const Case &c, const std::string &text) {
    Outcome o;
    try {
        ir::Module m = ir::parse_module(text, c.name + ".ir");
        std::vector<Region> regions;
        for (const auto &b : c.inputs) regions.push_back(Region{b});
        run_kernel(m.kernels.at(0), regions, Launch{c.grid, c.block});
        for (Region &r : regions) o.buffers.push_back(std::move(r.bytes));
        o.ok = true;
    } catch (const std::exception &e) {
        o.error = e.what();
    }
    return o;
}

using Signature = std::tuple<int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, half, bfloat16,
                             float, double>;

/// A worker's memory on one device: the twelve buffers of a case packed into one allocation (each
/// at a 256-byte boundary) and staged through one pinned host buffer, kept from kernel to kernel.
/// A kernel then costs one copy each way; twelve allocations and 24 pageable copies a kernel,
/// each waiting for the GPU's time slice among the workers' contexts, made the GPU side the
/// tester's bottleneck. Grown when a case needs more.
struct Arena {
    size_t bytes = 0;
    std::optional<DeviceBuffer<uint8_t>> device;
    std::optional<HostBuffer<uint8_t>> host;
};

constexpr size_t kArenaAlign = 256;
size_t align_up(size_t n) { return (n + kArenaAlign - 1) / kArenaAlign * kArenaAlign; }

template <size_t... I>
Outcome launch(const DeviceContext &ctx, Arena &arena, const Case &c, const std::string &text,
               std::index_sequence<I...>) {
    Outcome o;
    DeviceModule m = ctx.load_module(ModuleImage::ember_ir(text, c.name + ".ir"));
    auto f = m.get_function<Ptr<std::tuple_element_t<I, Signature>>...>(c.name);
    size_t offsets[sizeof...(I) + 1] = {};
    for (size_t i = 0; i < sizeof...(I); ++i) offsets[i + 1] = offsets[i] + align_up(c.inputs[i].size());
    const size_t total = offsets[sizeof...(I)];
    if (arena.bytes < total) {
        arena.device.reset();
        arena.host.reset();
        arena.device = ctx.enqueue_create_buffer<uint8_t>(total);
        arena.host = ctx.enqueue_create_host_buffer<uint8_t>(total);
        arena.bytes = total;
    }
    DeviceBuffer<uint8_t> dev = arena.device->create_sub_buffer(0, total);
    HostBuffer<uint8_t> host = arena.host->create_sub_buffer(0, total);
    for (size_t i = 0; i < sizeof...(I); ++i) std::memcpy(host.data() + offsets[i], c.inputs[i].data(), c.inputs[i].size());
    ctx.enqueue_copy(dev, host);
    auto bufs = std::make_tuple(dev.create_sub_buffer<std::tuple_element_t<I, Signature>>(
        offsets[I], c.inputs[I].size() / sizeof(std::tuple_element_t<I, Signature>))...);
    ctx.enqueue_function(f, std::get<I>(bufs)..., grid_dim(static_cast<int64_t>(c.grid)),
                         block_dim(static_cast<int64_t>(c.block)));
    ctx.enqueue_copy(host, dev);
    ctx.synchronize();
    o.buffers = c.inputs;
    for (size_t i = 0; i < sizeof...(I); ++i) std::memcpy(o.buffers[i].data(), host.data() + offsets[i], o.buffers[i].size());
    o.ok = true;
    return o;
}

Outcome run_device(const DeviceContext &ctx, Arena &arena, const Case &c, const std::string &text) {
    try {
        return launch(ctx, arena, c, text, std::make_index_sequence<std::tuple_size_v<Signature>>{});
    } catch (const LaunchError &e) {
        Outcome o;
        o.error = std::string("LaunchError: ") + e.what();
        return o;
    } catch (const std::exception &e) {
        Outcome o;
        o.error = e.what();
        return o;
    }
}

// ---------------------------------------------------------------------------------------------
// Comparing.

struct Difference {
    size_t buffer = 0;
    uint64_t element = 0;
    uint64_t a = 0, b = 0;
};

uint64_t element_bits(const std::vector<uint8_t> &buf, ir::ScalarType t, uint64_t i) {
    unsigned n = ir::Type(t).bytes();
    uint64_t v = 0;
    std::memcpy(&v, buf.data() + i * n, n);
    return v;
}

bool same_value(ir::ScalarType t, uint64_t a, uint64_t b) {
    if (a == b) return true;
    if (t >= ir::ScalarType::F16 && t <= ir::ScalarType::F64)
        return std::isnan(decode_float(t, a)) && std::isnan(decode_float(t, b));
    return false;
}

std::vector<Difference> compare(const Buffers &x, const Buffers &y, uint64_t *compared) {
    std::vector<Difference> out;
    const auto &types = buffer_types();
    for (size_t i = 0; i < types.size(); ++i) {
        unsigned n = ir::Type(types[i]).bytes();
        uint64_t count = x[i].size() / n;
        if (compared) *compared += count;
        for (uint64_t e = 0; e < count; ++e) {
            uint64_t a = element_bits(x[i], types[i], e), b = element_bits(y[i], types[i], e);
            if (!same_value(types[i], a, b)) out.push_back({i, e, a, b});
        }
    }
    return out;
}

std::string show(ir::ScalarType t, uint64_t bits) {
    char buf[96];
    std::string ty(ir::to_string(t));
    if (t >= ir::ScalarType::F16 && t <= ir::ScalarType::F64) {
        std::snprintf(buf, sizeof buf, "%.17g (0x%llx)", decode_float(t, bits), static_cast<unsigned long long>(bits));
    } else if (t >= ir::ScalarType::I8 && t <= ir::ScalarType::I64) {
        unsigned w = ir::Type(t).bits();
        int64_t v = w == 64 ? static_cast<int64_t>(bits)
                            : static_cast<int64_t>((bits ^ (uint64_t{1} << (w - 1))) - (uint64_t{1} << (w - 1)));
        std::snprintf(buf, sizeof buf, "%lld (0x%llx)", static_cast<long long>(v), static_cast<unsigned long long>(bits));
    } else {
        std::snprintf(buf, sizeof buf, "%llu (0x%llx)", static_cast<unsigned long long>(bits),
                      static_cast<unsigned long long>(bits));
    }
    return buf;
}

/// Where element `e` of a buffer lies: an input or output slot of a thread, or an atomic slot.
std::string where(const Case &c, uint64_t e, uint64_t *thread = nullptr) {
    const uint64_t threads = c.grid * c.block;
    std::string region;
    uint64_t rel = e;
    if (e < threads * kSlots) region = "input";
    else if (e < 2 * threads * kSlots) region = "output", rel = e - threads * kSlots;
    else return "atomic slot " + std::to_string(e - 2 * threads * kSlots);
    if (thread) *thread = rel / kSlots;
    return region + " slot " + std::to_string(rel % kSlots) + " of thread " + std::to_string(rel / kSlots) +
           " (block " + std::to_string(rel / kSlots / c.block) + ", thread_idx " + std::to_string(rel / kSlots % c.block) + ")";
}

// ---------------------------------------------------------------------------------------------
// The worker: kernels of one stripe of seeds.

struct Runner {
    std::string name; ///< "cpu", "cuda", "interp"
    std::optional<DeviceContext> ctx;
    std::shared_ptr<Arena> arena = std::make_shared<Arena>();
    Outcome run(const Case &c, const std::string &text) const {
        return ctx ? run_device(*ctx, *arena, c, text) : run_interpreter(c, text);
    }
};

/// Whether the pair (a, b) still disagrees on `text` (both ran, outputs differ); for minimising.
/// A candidate the interpreter cannot run (a deleted counter update that makes a loop endless, a
/// read of a deleted variable) is rejected before any device runs it.
bool still_disagrees(const Runner &a, const Runner &b, const Case &c, const std::string &text) {
    Outcome reference = run_interpreter(c, text);
    if (!reference.ok) return false;
    Outcome x = a.ctx ? a.run(c, text) : reference, y = b.ctx ? b.run(c, text) : reference;
    if (!x.ok || !y.ok) return false;
    return !compare(x.buffers, y.buffers, nullptr).empty();
}

/// Statement deletion, last to first, while the pair disagrees. Barriers, shared and local arrays
/// and the statements that use them stay (deleting the loop that fills a local array, or a store
/// into a shared one, would make the kernel racy or read undefined memory).
std::string minimise(const Runner &a, const Runner &b, const Case &c, std::string text) {
    auto protected_line = [](const std::string &l) {
        return l.find("barrier") != std::string::npos || l.find("shared") != std::string::npos ||
               l.find("local") != std::string::npos || l.find("%s") != std::string::npos ||
               l.find("%l") != std::string::npos || l.find("return") != std::string::npos;
    };
    auto indent = [](const std::string &l) { return l.find_first_not_of(' '); };
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    bool changed = true;
    int attempts = 0;
    while (changed && attempts < 400) {
        changed = false;
        std::vector<std::string> lines = split(text, '\n');
        for (size_t i = lines.size(); i-- > 1;) {
            if (std::chrono::steady_clock::now() > deadline || attempts >= 400) return text;
            const std::string &l = lines[i];
            if (i + 1 >= lines.size() || l.rfind("kernel ", 0) == 0 || l.rfind("func ", 0) == 0) continue;
            size_t ind = indent(l);
            if (ind == std::string::npos || l[ind] == '}' || ind == 0) continue;
            size_t last = i;
            if (l.back() == '{') {
                // the whole statement, through its closing brace at the same indentation
                while (last + 1 < lines.size() && !(indent(lines[last + 1]) == ind && lines[last + 1][ind] == '}' &&
                                                    lines[last + 1].back() != '{'))
                    ++last;
                ++last;
                if (last >= lines.size()) continue;
            }
            bool skip = false;
            for (size_t k = i; k <= last; ++k) skip |= protected_line(lines[k]);
            if (skip) continue;
            std::string candidate;
            for (size_t k = 0; k < lines.size(); ++k)
                if (k < i || k > last) candidate += lines[k] + "\n";
            ++attempts;
            if (still_disagrees(a, b, c, candidate)) {
                text = candidate;
                lines = split(text, '\n');
                changed = true;
                if (i > lines.size()) i = lines.size();
            }
        }
    }
    return text;
}

std::string report(const Options &opt, const Case &c, const std::string &pair, const std::string &text, const Runner &ra,
                   const Outcome &a, const Runner &rb, const Outcome &b, const std::vector<Difference> &diffs) {
    std::ostringstream os;
    const auto &types = buffer_types();
    os << "=== difftest: seed " << c.seed << ": " << pair << " disagree (" << diffs.size()
       << " values) ===\n";
    os << "replay: ember-difftest --seed " << c.seed << " --count 1 --devices "
       << (ra.ctx ? ra.name : rb.name) << (opt.generate.no_half_fma ? " --no-half-fma" : "") << "\n";
    os << "launch: grid_dim(" << c.grid << "), block_dim(" << c.block << "); buffers of "
       << buffer_elements(c.grid * c.block) << " elements (" << kSlots << " input and " << kSlots
       << " output slots per thread, then " << kAtomicSlots << " atomic slots)\n";
    os << "--- kernel\n" << text;
    size_t shown = 0;
    uint64_t thread = UINT64_MAX;
    for (const Difference &d : diffs) {
        if (shown++ == 0) os << "--- differing values (" << ra.name << " | " << rb.name << ")\n";
        if (shown > 16) break;
        uint64_t t = UINT64_MAX;
        os << "  p_" << ir::to_string(types[d.buffer]) << "[" << d.element << "] (" << where(c, d.element, &t)
           << "): " << show(types[d.buffer], d.a) << " | " << show(types[d.buffer], d.b) << "\n";
        if (thread == UINT64_MAX) thread = t;
    }
    (void)a;
    (void)b;
    if (thread != UINT64_MAX) {
        os << "--- inputs of thread " << thread << " (slot 0.." << kSlots - 1 << ")\n";
        for (size_t i = 0; i < types.size(); ++i) {
            os << "  p_" << ir::to_string(types[i]) << ":";
            for (uint64_t j = 0; j < kSlots; ++j) os << " " << show(types[i], element_bits(c.inputs[i], types[i], thread * kSlots + j));
            os << "\n";
        }
    }
    return os.str();
}

void send(int fd, const std::string &line) {
    std::string l = line;
    for (char &ch : l)
        if (ch == '\n') ch = ' ';
    l += '\n';
    const char *p = l.data();
    size_t n = l.size();
    while (n) {
        ssize_t w = ::write(fd, p, n);
        if (w <= 0) std::_Exit(4);
        p += w;
        n -= static_cast<size_t>(w);
    }
}

int worker(const Options &opt, uint64_t first, uint64_t end, uint64_t stride, int fd) {
    std::vector<Runner> runners;
    std::vector<std::string> devices = opt.devices;
    if (devices.empty()) {
        devices.push_back("cpu");
        try {
            if (DeviceContext::number_of_devices("cuda") > 0) devices.push_back("cuda");
        } catch (const std::exception &) {
        }
    }
    try {
        for (const std::string &d : devices) runners.push_back(Runner{d, DeviceContext(0, d)});
    } catch (const std::exception &e) {
        send(fd, std::string("X 0 cannot open a device: ") + e.what());
        return 3;
    }
    runners.push_back(Runner{"interp", std::nullopt});
    std::string names;
    for (const Runner &r : runners) names += (names.empty() ? "" : ",") + r.name;
    send(fd, "I " + names);
    unsigned minimised = 0;
    for (uint64_t seed = first; seed < end; seed += stride) {
        send(fd, "S " + std::to_string(seed));
        if (opt.crash_on && *opt.crash_on == seed) std::abort();
        Case c;
        try {
            c = make_case(seed, opt.generate, opt.kernel_text);
        } catch (const std::exception &e) {
            send(fd, "X " + std::to_string(seed) + " generator: " + e.what());
            continue;
        }
        std::vector<Outcome> outs;
        bool fatal = false;
        for (const Runner &r : runners) {
            outs.push_back(r.run(c, c.text));
            if (!outs.back().ok) {
                send(fd, "F " + std::to_string(seed) + " " + r.name + " " + outs.back().error);
                // A launch failure may leave a GPU's context unusable: the worker ends after
                // reporting it, and the parent starts another for the seeds after this one.
                if (r.name != "cpu" && r.name != "interp" && outs.back().error.rfind("LaunchError", 0) == 0) fatal = true;
            }
        }
        if (fatal) return 5;
        uint64_t compared = 0;
        // every device against the interpreter, then the devices against each other
        const size_t interp = runners.size() - 1;
        std::vector<std::pair<size_t, size_t>> pairs;
        for (size_t i = 0; i < interp; ++i) pairs.emplace_back(i, interp);
        for (size_t i = 0; i < interp; ++i)
            for (size_t j = i + 1; j < interp; ++j) pairs.emplace_back(j, i);
        for (auto [i, j] : pairs) {
            if (!outs[i].ok || !outs[j].ok) continue;
            std::vector<Difference> d = compare(outs[i].buffers, outs[j].buffers, &compared);
            if (d.empty()) continue;
            const std::string pair = runners[i].name + " vs " + runners[j].name;
            std::string text = opt.minimise && minimised++ < opt.max_minimised ? minimise(runners[i], runners[j], c, c.text) : c.text;
            Outcome a = runners[i].run(c, text), b = runners[j].run(c, text);
            if (a.ok && b.ok && text != c.text) d = compare(a.buffers, b.buffers, nullptr);
            else text = c.text, a = outs[i], b = outs[j];
            std::string rep = report(opt, c, pair, text, runners[i], a, runners[j], b, d);
            const std::string base = opt.repro_dir + "/difftest-" + std::to_string(seed);
            std::ofstream ir_file(base + ".ir"), txt_file(base + ".txt");
            ir_file << text << std::flush;
            txt_file << rep << std::flush;
            if (!ir_file || !txt_file) {
                // The report is not lost: the parent prints what the message carries.
                send(fd, "X " + std::to_string(seed) + " cannot write " + base + ".txt/.ir (" + std::strerror(errno) +
                             "); " + pair + " disagree, replay with --seed " + std::to_string(seed) + " --count 1");
                continue;
            }
            send(fd, "D " + std::to_string(seed) + " " + runners[i].name + ":" + runners[j].name + " " + base + ".txt");
        }
        send(fd, "K " + std::to_string(seed) + " " + std::to_string(compared));
    }
    send(fd, "E");
    return 0;
}

// ---------------------------------------------------------------------------------------------
// The parent: forks the workers, restarts one past a crash, sums up.

/// DIR/crash-<seed>.ir (the whole kernel: a worker that crashed or hung reported nothing) and
/// DIR/crash-<seed>.txt (what happened, how to replay it), so that the repro archive of a GPU run
/// holds what is needed to look at it. A failure to write is said, not fatal.
void write_crash_report(const Options &opt, uint64_t seed, const std::string &how) {
    const std::string base = opt.repro_dir + "/crash-" + std::to_string(seed);
    std::string kernel;
    try {
        Generated g = generate(seed, opt.generate);
        kernel = "// grid_dim(" + std::to_string(g.grid) + "), block_dim(" + std::to_string(g.block) + ")\n" +
                 ember::ir::print(g.kernel);
    } catch (const std::exception &e) {
        kernel = std::string("// the generator failed: ") + e.what() + "\n";
    }
    std::string devices;
    for (const std::string &d : opt.devices) devices += (devices.empty() ? "" : ",") + d;
    std::ofstream ir_file(base + ".ir"), txt_file(base + ".txt");
    ir_file << kernel << std::flush;
    txt_file << "=== difftest: seed " << seed << ": the worker " << how << " ===\n"
             << "replay: ember-difftest --seed " << seed << " --count 1"
             << (devices.empty() ? "" : " --devices " + devices) << (opt.generate.no_half_fma ? " --no-half-fma" : "")
             << "\nthe kernel (not minimised): " << base << ".ir\n" << std::flush;
    if (!ir_file || !txt_file)
        std::cout << "ember-difftest: cannot write " << base << ".txt/.ir (" << std::strerror(errno) << ")\n";
}

struct Worker {
    pid_t pid = -1;
    int fd = -1;
    uint64_t next = 0; ///< the next seed of its stripe not yet finished
    uint64_t current = UINT64_MAX;
    std::string partial;
    std::chrono::steady_clock::time_point last;
    bool done = false;
};

struct Summary {
    uint64_t kernels = 0, compared = 0, failures = 0, tester_errors = 0, crashes = 0;
    std::map<std::string, uint64_t> by_pair;
    std::set<uint64_t> failing_seeds;
    std::string devices;
};

/// Set by SIGINT/SIGTERM: the parent stops its workers and prints the summary of what ran.
volatile sig_atomic_t stop_requested = 0;
extern "C" void request_stop(int) { stop_requested = 1; }

Worker spawn(const Options &opt, uint64_t first, uint64_t end, uint64_t stride) {
    int p[2];
    if (::pipe(p) != 0) {
        std::perror("ember-difftest: pipe");
        std::exit(2);
    }
    std::fflush(nullptr);
    pid_t pid = ::fork();
    if (pid < 0) {
        std::perror("ember-difftest: fork");
        std::exit(2);
    }
    if (pid == 0) {
        ::close(p[0]);
        ::signal(SIGINT, SIG_DFL);
        ::signal(SIGTERM, SIG_DFL);
        int rc = 3;
        try {
            rc = worker(opt, first, end, stride, p[1]);
        } catch (const std::exception &e) {
            send(p[1], std::string("X 0 worker: ") + e.what());
        }
        std::fflush(nullptr);
        std::_Exit(rc);
    }
    ::close(p[1]);
    Worker w;
    w.pid = pid;
    w.fd = p[0];
    w.next = first;
    w.last = std::chrono::steady_clock::now();
    return w;
}

void handle_line(const std::string &line, Worker &w, Summary &s) {
    if (line.empty()) return;
    char kind = line[0];
    std::string rest = line.size() > 2 ? line.substr(2) : std::string();
    uint64_t seed = std::strtoull(rest.c_str(), nullptr, 10);
    std::string after = rest.find(' ') == std::string::npos ? std::string() : rest.substr(rest.find(' ') + 1);
    switch (kind) {
    case 'I': s.devices = rest; break;
    case 'S': w.current = seed; break;
    case 'K':
        ++s.kernels;
        s.compared += std::strtoull(after.c_str(), nullptr, 10);
        w.current = UINT64_MAX;
        if (s.kernels % 5000 == 0)
            std::fprintf(stderr, "ember-difftest: %llu kernels, %llu disagreements\n",
                         static_cast<unsigned long long>(s.kernels), static_cast<unsigned long long>(s.failures));
        break;
    case 'D': {
        std::string pair = after.substr(0, after.find(' '));
        std::string path = after.substr(after.find(' ') + 1);
        ++s.by_pair[pair];
        ++s.failures;
        s.failing_seeds.insert(seed);
        // Streaming a file that did not open would set cout's failbit and silence the rest.
        std::ifstream in(path);
        if (in) std::cout << in.rdbuf();
        else std::cout << "=== difftest: seed " << seed << ": " << pair << " disagree (cannot read " << path << ")\n";
        std::cout << "(written to " << path << ")\n" << std::flush;
        break;
    }
    case 'F':
        ++s.failures;
        ++s.by_pair[after.substr(0, after.find(' ')) + " failed"];
        s.failing_seeds.insert(seed);
        std::cout << "=== difftest: seed " << seed << ": " << after << "\n" << std::flush;
        break;
    case 'X':
        ++s.tester_errors;
        s.failing_seeds.insert(seed);
        std::cout << "=== difftest: seed " << seed << ": error of the tester: " << after << "\n" << std::flush;
        break;
    case 'E': w.done = true; break;
    default: break;
    }
}

int parent(const Options &opt) {
    const uint64_t end = opt.seed + opt.count;
    const unsigned jobs = static_cast<unsigned>(std::min<uint64_t>(opt.jobs, std::max<uint64_t>(opt.count, 1)));
    Summary s;
    std::vector<Worker> workers;
    ::signal(SIGINT, request_stop);
    ::signal(SIGTERM, request_stop);
    for (unsigned j = 0; j < jobs; ++j) workers.push_back(spawn(opt, opt.seed + j, end, jobs));
    const auto t0 = std::chrono::steady_clock::now();
    bool stopped = false;
    for (;;) {
        if (stop_requested && !stopped) {
            stopped = true;
            for (Worker &w : workers)
                if (w.fd >= 0) ::kill(w.pid, SIGKILL);
            for (Worker &w : workers)
                if (w.fd >= 0) {
                    ::close(w.fd);
                    w.fd = -1;
                    ::waitpid(w.pid, nullptr, 0);
                }
            std::cout << "=== difftest: interrupted; the summary covers the kernels that finished\n";
        }
        std::vector<pollfd> fds;
        std::vector<size_t> index;
        for (size_t i = 0; i < workers.size(); ++i)
            if (workers[i].fd >= 0) {
                fds.push_back({workers[i].fd, POLLIN, 0});
                index.push_back(i);
            }
        if (fds.empty()) break;
        ::poll(fds.data(), fds.size(), 1000);
        for (size_t k = 0; k < fds.size(); ++k) {
            Worker &w = workers[index[k]];
            bool closed = false;
            if (fds[k].revents & (POLLIN | POLLHUP | POLLERR)) {
                char buf[65536];
                ssize_t n = ::read(w.fd, buf, sizeof buf);
                if (n <= 0) closed = true;
                else {
                    w.last = std::chrono::steady_clock::now();
                    w.partial.append(buf, static_cast<size_t>(n));
                    size_t nl;
                    while ((nl = w.partial.find('\n')) != std::string::npos) {
                        std::string line = w.partial.substr(0, nl);
                        w.partial.erase(0, nl + 1);
                        handle_line(line, w, s);
                    }
                }
            }
            bool hung = !closed && std::chrono::steady_clock::now() - w.last > std::chrono::seconds(opt.timeout_s);
            if (hung) ::kill(w.pid, SIGKILL);
            if (!closed && !hung) continue;
            ::close(w.fd);
            w.fd = -1;
            int status = 0;
            ::waitpid(w.pid, &status, 0);
            if (w.done) continue;
            // The worker died (or hung) on w.current: report it and go on past it.
            uint64_t bad = w.current;
            ++s.crashes;
            ++s.failures;
            std::string how = hung ? "hung (no progress for " + std::to_string(opt.timeout_s) + " s)"
                              : WIFSIGNALED(status) ? std::string("was killed by signal ") + strsignal(WTERMSIG(status))
                                                    : "exited with status " + std::to_string(WEXITSTATUS(status));
            std::cout << "=== difftest: seed " << (bad == UINT64_MAX ? std::string("?") : std::to_string(bad))
                      << ": the worker " << how << "\n" << std::flush;
            if (bad == UINT64_MAX) continue; // died outside a kernel: give up on this stripe
            write_crash_report(opt, bad, how);
            s.failing_seeds.insert(bad);
            ++s.by_pair["crash or hang"];
            if (bad + jobs < end) {
                Worker n = spawn(opt, bad + jobs, end, jobs);
                w = n;
            }
        }
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::string asked;
    for (const std::string &d : opt.devices) asked += (asked.empty() ? "" : ",") + d;
    std::cout << "ember-difftest: seeds " << opt.seed << ".." << end - 1 << ", devices "
              << (s.devices.empty() ? "none opened (asked: " + (asked.empty() ? std::string("default") : asked) + ")"
                                    : s.devices)
              << " (against each other and the interpreter), " << jobs << " jobs, " << secs << " s\n";
    std::cout << "  kernels: " << s.kernels << ", values compared: " << s.compared << ", disagreements: "
              << s.failures << ", errors of the tester: " << s.tester_errors << "\n";
    for (const auto &[pair, n] : s.by_pair) std::cout << "  " << pair << ": " << n << "\n";
    if (!s.failing_seeds.empty()) {
        std::cout << "  seeds:";
        for (uint64_t x : s.failing_seeds) std::cout << " " << x;
        std::cout << "\n";
    }
    return s.failures || s.tester_errors || s.kernels != opt.count ? 1 : 0;
}

} // namespace
} // namespace ember::difftest

int main(int argc, char **argv) {
    using namespace ember::difftest;
    Options opt;
    std::optional<uint64_t> print_seed;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage(a + " needs a value");
            return argv[++i];
        };
        auto number = [&]() -> uint64_t {
            std::string v = value();
            char *endp = nullptr;
            uint64_t n = std::strtoull(v.c_str(), &endp, 10);
            if (v.empty() || *endp) usage(a + " takes a number, not '" + v + "'");
            return n;
        };
        if (a == "--seed") opt.seed = number();
        else if (a == "--count") opt.count = number();
        else if (a == "--jobs") opt.jobs = static_cast<unsigned>(std::max<uint64_t>(1, number()));
        else if (a == "--devices") {
            opt.devices = split(value(), ',');
            for (const std::string &d : opt.devices)
                if (d != "cpu" && d != "cuda") usage("unknown device '" + d + "' (cpu, cuda)");
        } else if (a == "--repro-dir") opt.repro_dir = value();
        else if (a == "--no-minimise") opt.minimise = false;
        else if (a == "--timeout") opt.timeout_s = static_cast<unsigned>(number());
        else if (a == "--no-half-fma") opt.generate.no_half_fma = true;
        else if (a == "--minimise-at-most") opt.max_minimised = static_cast<unsigned>(number());
        else if (a == "--print") print_seed = number();
        else if (a == "--crash-on") opt.crash_on = number();
        else if (a == "--kernel") {
            opt.kernel_file = value();
            std::ifstream f(opt.kernel_file);
            std::stringstream text;
            text << f.rdbuf();
            if (!f || text.str().empty()) usage("--kernel: cannot read '" + opt.kernel_file + "'");
            opt.kernel_text = text.str();
            try {
                (void)make_case(opt.seed, opt.generate, opt.kernel_text);
            } catch (const std::exception &e) {
                usage(std::string(e.what()));
            }
        }
        else if (a == "--self-test") return self_test();
        else if (a == "-h" || a == "--help") usage("differential tester of ember's compiler");
        else usage("unknown argument '" + a + "'");
    }
    if (print_seed) {
        Generated g = generate(*print_seed, opt.generate);
        std::cout << "// grid_dim(" << g.grid << "), block_dim(" << g.block << ")\n" << ember::ir::print(g.kernel);
        return 0;
    }
    // The reports of disagreements go there: made now, or a clear error before any kernel runs.
    {
        std::error_code ec;
        std::filesystem::create_directories(opt.repro_dir, ec);
        if (ec || !std::filesystem::is_directory(opt.repro_dir)) {
            std::fprintf(stderr, "ember-difftest: --repro-dir '%s' is not a directory that can be made (%s)\n",
                         opt.repro_dir.c_str(), ec ? ec.message().c_str() : "a file of that name exists");
            return 2;
        }
    }
    // Kernels are compiled once each: the disk cache and the preload would only grow.
    ::setenv("EMBER_DISABLE_CACHE", "1", 0);
    ::setenv("EMBER_PRELOAD", "0", 0);
    // Each worker is one process; its CPU device needs no more than one thread.
    ::setenv("EMBER_CPU_THREADS", "1", 0);
    return parent(opt);
}
