/// \file
/// External modules: ModuleImage, DeviceContext::load_module, DeviceModule (functions with a
/// declared signature, globals as buffers), and the PTX scan behind their checks and messages.
/// See docs/runtime.md, "External modules".
#include "Functions.h"

#include "ember/runtime/Module.h"

#include "ember/compiler/FileIO.h"
#include "ember/compiler/IRPrinter.h"

#include <cctype>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>

namespace ember {

// ---------------------------------------------------------------------------------------------
// ModuleImage.

ModuleImage ModuleImage::ptx(std::string text, std::string name) {
    return ModuleImage(Format::ptx, std::move(text), std::move(name));
}

ModuleImage ModuleImage::cubin(std::span<const std::byte> bytes, std::string name) {
    return ModuleImage(Format::cubin, std::string(reinterpret_cast<const char *>(bytes.data()), bytes.size()),
                       std::move(name));
}

ModuleImage ModuleImage::cubin(std::string bytes, std::string name) {
    return ModuleImage(Format::cubin, std::move(bytes), std::move(name));
}

ModuleImage ModuleImage::fatbin(std::span<const std::byte> bytes, std::string name) {
    return ModuleImage(Format::fatbin, std::string(reinterpret_cast<const char *>(bytes.data()), bytes.size()),
                       std::move(name));
}

ModuleImage ModuleImage::ember_ir(std::string text, std::string name) {
    return ModuleImage(Format::ember_ir, std::move(text), std::move(name));
}

ModuleImage ModuleImage::file(const std::filesystem::path &path) {
    // A regular file of bounded size: a directory or /dev/zero is a LogicError naming the path.
    std::optional<std::string> read;
    try {
        read = read_regular_file_if_exists(path.string());
    } catch (const LogicError &e) {
        throw LogicError(std::string("ModuleImage::file: ") + e.what());
    }
    if (!read) throw RuntimeError("ModuleImage::file: cannot open '" + path.string() + "': no such file");
    std::string bytes = std::move(*read);
    const std::string ext = path.extension().string();
    const std::string name = path.string();
    if (ext == ".ptx") return ModuleImage(Format::ptx, std::move(bytes), name);
    if (ext == ".cubin") return ModuleImage(Format::cubin, std::move(bytes), name);
    if (ext == ".fatbin") return ModuleImage(Format::fatbin, std::move(bytes), name);
    if (ext == ".ir") return ModuleImage(Format::ember_ir, std::move(bytes), name);
    if (bytes.rfind("\x7f" "ELF", 0) == 0) return ModuleImage(Format::cubin, std::move(bytes), name);
    if (bytes.rfind("\x50\xed\x55\xba", 0) == 0) return ModuleImage(Format::fatbin, std::move(bytes), name);
    if (bytes.find(".version") != std::string::npos && bytes.find(".target") != std::string::npos)
        return ModuleImage(Format::ptx, std::move(bytes), name);
    throw LogicError("ModuleImage::file: '" + name +
                     "' is neither PTX nor a cubin, a fatbin or ember IR (by its extension, "
                     ".ptx/.cubin/.fatbin/.ir, or its content)");
}

namespace detail {

// ---------------------------------------------------------------------------------------------
// Scanning PTX.

namespace {

/// The text without comments (string literals kept).
std::string strip_comments(std::string_view in) {
    std::string out;
    out.reserve(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
        char c = in[i];
        if (c == '"') {
            size_t end = in.find('"', i + 1);
            if (end == std::string_view::npos) end = in.size() - 1;
            out.append(in.substr(i, end - i + 1));
            i = end;
        } else if (c == '/' && i + 1 < in.size() && in[i + 1] == '/') {
            i = in.find('\n', i);
            if (i == std::string_view::npos) break;
            out += '\n';
        } else if (c == '/' && i + 1 < in.size() && in[i + 1] == '*') {
            size_t end = in.find("*/", i + 2);
            if (end == std::string_view::npos) break;
            out += ' ';
            i = end + 1;
        } else {
            out += c;
        }
    }
    return out;
}

std::vector<std::string> tokens_of(const std::string &stmt) {
    std::vector<std::string> t;
    std::string cur;
    auto flush = [&] {
        if (!cur.empty()) t.push_back(std::move(cur));
        cur.clear();
    };
    for (char c : stmt) {
        if (std::isspace(static_cast<unsigned char>(c))) {
            flush();
        } else if (c == '(' || c == ')' || c == ',' || c == '[' || c == ']' || c == '=') {
            flush();
            t.emplace_back(1, c);
        } else {
            cur += c;
        }
    }
    flush();
    return t;
}

bool is_identifier(const std::string &s) {
    if (s.empty()) return false;
    unsigned char c = static_cast<unsigned char>(s[0]);
    return std::isalpha(c) || c == '_' || c == '$' || c == '%';
}

bool has(const std::vector<std::string> &t, const char *word) {
    for (const std::string &s : t)
        if (s == word) return true;
    return false;
}

/// Bytes of a PTX fundamental type (.u32 is 4), 0 for anything else.
size_t type_bytes(const std::string &s) {
    if (s.size() < 3 || s[0] != '.') return 0;
    char k = s[1];
    if (k != 'u' && k != 's' && k != 'b' && k != 'f') return 0;
    const std::string bits = s.substr(2);
    if (bits == "8") return 1;
    if (bits == "16") return 2;
    if (bits == "32") return 4;
    if (bits == "64") return 8;
    return 0;
}

/// One parameter's tokens (".param .align 8 .b8 s[16]") to its bytes; 0 when unknown, SIZE_MAX
/// (which no parameter type matches) when the declared array's bytes overflow.
size_t param_bytes(const std::vector<std::string> &p) {
    size_t elem = 0, count = 1;
    for (size_t i = 0; i < p.size(); ++i) {
        if (size_t b = type_bytes(p[i])) elem = b;
        if (p[i] == "[" && i + 1 < p.size()) count = std::strtoull(p[i + 1].c_str(), nullptr, 10);
    }
    size_t bytes = 0;
    if (__builtin_mul_overflow(elem, count, &bytes)) return std::numeric_limits<size_t>::max();
    return bytes;
}

void scan_statement(const std::string &stmt, PtxSymbols &out) {
    std::vector<std::string> t = tokens_of(stmt);
    if (t.empty()) return;
    for (size_t i = 0; i < t.size(); ++i) {
        if (t[i] != ".entry") continue;
        if (i + 1 >= t.size() || !is_identifier(t[i + 1])) return;
        PtxSymbols::Entry e;
        e.name = t[i + 1];
        size_t j = i + 2;
        if (j < t.size() && t[j] == "(") {
            std::vector<std::string> param;
            for (++j; j < t.size() && t[j] != ")"; ++j) {
                if (t[j] == ",") {
                    e.param_bytes.push_back(param_bytes(param));
                    param.clear();
                } else {
                    param.push_back(t[j]);
                }
            }
            if (!param.empty()) e.param_bytes.push_back(param_bytes(param));
        }
        out.entries.push_back(std::move(e));
        return;
    }
    if ((has(t, ".global") || has(t, ".const")) && !has(t, ".extern") && !has(t, ".func")) {
        std::string name;
        for (const std::string &s : t) {
            if (s == "[" || s == "=") break;
            if (is_identifier(s)) name = s;
        }
        if (!name.empty()) out.globals.push_back(name);
    }
}

std::string join(const std::vector<std::string> &v) {
    std::string s;
    for (const std::string &x : v) s += (s.empty() ? "'" : ", '") + x + "'";
    return s;
}

/// The text without the module directives that end at the line's end, not at a ';' (.version,
/// .target, .address_size, .file, .loc).
std::string strip_line_directives(const std::string &in) {
    std::string out;
    size_t pos = 0;
    while (pos < in.size()) {
        size_t end = in.find('\n', pos);
        if (end == std::string::npos) end = in.size();
        std::string_view line(in.data() + pos, end - pos);
        size_t first = line.find_first_not_of(" \t\r");
        bool drop = false;
        if (first != std::string_view::npos)
            for (std::string_view d : {".version", ".target", ".address_size", ".file", ".loc"})
                if (line.substr(first, d.size()) == d &&
                    (line.size() == first + d.size() || std::isspace(static_cast<unsigned char>(line[first + d.size()]))))
                    drop = true;
        if (!drop) out.append(line);
        out += '\n';
        pos = end + 1;
    }
    return out;
}

} // namespace

PtxSymbols scan_ptx(std::string_view ptx) {
    const std::string text = strip_line_directives(strip_comments(ptx));
    PtxSymbols out;
    int depth = 0;
    std::string stmt;
    for (char c : text) {
        if (c == '{') {
            if (depth == 0) {
                scan_statement(stmt, out);
                stmt.clear();
            }
            ++depth;
        } else if (c == '}') {
            if (depth > 0) --depth;
        } else if (depth == 0) {
            if (c == ';') {
                scan_statement(stmt, out);
                stmt.clear();
            } else {
                stmt += c;
            }
        }
    }
    scan_statement(stmt, out);
    return out;
}

// ---------------------------------------------------------------------------------------------
// Functions and globals of a module.

namespace {

/// A kernel of an ember IR module, compiled for the module's context on first use.
std::shared_ptr<FunctionImpl> ir_function(const ModuleImpl &m, const std::string &name,
                                          const std::vector<ir::Type> &types, std::vector<std::string> names,
                                          const std::string &where) {
    const ir::Kernel *k = nullptr;
    std::vector<std::string> known;
    for (const ir::Kernel &x : m.ir_kernels) {
        known.push_back(x.name);
        if (x.name == name) k = &x;
    }
    if (!k)
        throw LogicError("get_function: " + where + " has no kernel '" + name + "'" +
                         (known.empty() ? std::string() : "; its kernels are " + join(known)));
    if (k->params.size() != types.size())
        throw LogicError("get_function('" + name + "') of " + where + ": the signature declares " +
                         std::to_string(types.size()) + " parameters but the kernel has " +
                         std::to_string(k->params.size()));
    for (size_t i = 0; i < types.size(); ++i)
        if (!(k->params[i]->type == types[i]))
            throw LogicError("get_function('" + name + "') of " + where + ": parameter " + std::to_string(i) +
                             " ('" + k->params[i]->name + "') is " + k->params[i]->type.to_string() +
                             " but the signature declares " + types[i].to_string());
    // One compiled function per kernel and choice of parameter names (they only name things in
    // messages), shared by every get_function that asks for it, as PyCUDA's get_function.
    std::string key = name;
    for (const std::string &n : names) key += '\0' + n;
    std::lock_guard<std::mutex> lock(m.compiled_mutex);
    std::shared_ptr<FunctionImpl> &fn = m.compiled[key];
    if (!fn) {
        auto info = std::make_shared<KernelInfo>();
        info->ir = *k;
        if (names.empty())
            for (const ir::VariableRef &v : k->params) info->param_names.push_back(v->name);
        else
            info->param_names = std::move(names);
        fn = compile(m.context, info, {});
    }
    return fn;
}

} // namespace

std::shared_ptr<FunctionImpl> module_function(const ModuleImpl &m, const std::string &name,
                                              std::vector<ir::Type> types, std::vector<std::string> names) {
    const std::string where = "module '" + m.name + "' on " + m.context->label;
    if (!names.empty() && names.size() != types.size())
        throw LogicError("get_function('" + name + "') of " + where + ": " + std::to_string(names.size()) +
                         " parameter names for " + std::to_string(types.size()) + " parameters");
    if (m.format == static_cast<int>(ModuleImage::Format::ember_ir))
        return ir_function(m, name, types, std::move(names), where);
    const PtxSymbols::Entry *entry = nullptr;
    for (const PtxSymbols::Entry &e : m.ptx.entries)
        if (e.name == name) entry = &e;
    if (entry) {
        if (entry->param_bytes.size() != types.size())
            throw LogicError("get_function('" + name + "') of " + where + ": the signature declares " +
                             std::to_string(types.size()) + " parameters but the PTX's .entry has " +
                             std::to_string(entry->param_bytes.size()));
        for (size_t i = 0; i < types.size(); ++i) {
            size_t want = entry->param_bytes[i];
            if (want != 0 && want != types[i].bytes())
                throw LogicError("get_function('" + name + "') of " + where + ": parameter " + std::to_string(i) +
                                 " is declared " + types[i].to_string() + " (" + std::to_string(types[i].bytes()) +
                                 " bytes) but the PTX's parameter has " + std::to_string(want) + " bytes");
        }
    }
    std::unique_ptr<LoadedFunction> loaded = m.loaded->function(name);
    if (!loaded) {
        std::vector<std::string> known;
        for (const PtxSymbols::Entry &e : m.ptx.entries) known.push_back(e.name);
        if (known.empty()) known = m.loaded->function_names();
        throw LogicError("get_function: " + where + " has no kernel '" + name + "'" +
                         (known.empty() ? std::string() : "; its kernels are " + join(known)));
    }
    auto info = std::make_shared<KernelInfo>();
    info->ir.name = name;
    for (size_t i = 0; i < types.size(); ++i)
        info->ir.params.push_back(ir::Variable::make(names.empty() ? std::string() : names[i], types[i],
                                                     ir::VarKind::Param));
    info->param_names = std::move(names);
    auto fn = std::make_shared<FunctionImpl>();
    fn->backend = m.context->backend;
    fn->context = m.context.get();
    fn->context_ref = m.context;
    fn->context_label = m.context->label;
    fn->kernel = std::move(info);
    fn->compiled.kernel_name = name;
    fn->compiled.entry_symbol = name;
    fn->compiled.target = m.context->backend->target();
    // assembly() gives the module's PTX.
    if (m.format == static_cast<int>(ModuleImage::Format::ptx)) fn->compiled.binary = m.ptx_text;
    fn->loaded = std::move(loaded);
    fn->module = m.loaded;
    fn->static_shared_bytes = static_cast<uint64_t>(
        fn->backend->function_attribute(*fn->loaded, static_cast<int>(FunctionAttribute::shared_size_bytes), {}));
    return fn;
}

std::shared_ptr<RawDeviceBuffer> module_global(const ModuleImpl &m, const std::string &name) {
    if (!m.loaded)
        throw LogicError("get_global: module '" + m.name + "' on " + m.context->label + " has no global '" + name +
                         "'; ember IR modules have none");
    auto [address, bytes] = m.loaded->global(name);
    if (!address)
        throw LogicError("get_global: module '" + m.name + "' on " + m.context->label + " has no global '" + name +
                         "'" + (m.ptx.globals.empty() ? std::string() : "; its globals are " + join(m.ptx.globals)));
    return std::make_shared<RawDeviceBuffer>(m.context, address, bytes, m.loaded);
}

} // namespace detail

// ---------------------------------------------------------------------------------------------
// DeviceContext::load_module and DeviceModule.

DeviceModule DeviceContext::load_module(const ModuleImage &image) const {
    detail::ContextImpl &self = live("load_module");
    if (image.bytes().empty()) throw LogicError("load_module: the image '" + image.name() + "' is empty");
    auto m = std::make_shared<detail::ModuleImpl>();
    m->context = impl_;
    m->name = image.name();
    m->format = static_cast<int>(image.format());
    if (image.format() == ModuleImage::Format::ember_ir) {
        // Parsed and verified now (CompileError with file:line:col); compiled per kernel on first
        // get_function.
        ir::Module parsed = ir::parse_module(image.bytes(), image.name());
        m->ir_kernels = std::move(parsed.kernels);
        return DeviceModule(std::move(m));
    }
    if (image.format() == ModuleImage::Format::ptx) {
        m->ptx = detail::scan_ptx(image.bytes());
        m->ptx_text = image.bytes();
    }
    m->loaded = self.backend->load_module(m->format, image.bytes(), image.name());
    return DeviceModule(std::move(m));
}

const detail::ModuleImpl &DeviceModule::require(const char *method) const {
    if (!impl_) detail::throw_empty_handle("DeviceModule", method, "make one with load_module");
    return *impl_;
}

void DeviceModule::throw_global_size(const std::string &name, size_t bytes, size_t elem) const {
    throw LogicError("get_global<T>: global '" + name + "' of module '" + impl_->name + "' has " +
                     std::to_string(bytes) + " bytes, which is no multiple of sizeof(T) = " + std::to_string(elem));
}

DeviceBuffer<std::byte> DeviceModule::get_global(const std::string &name) const { return get_global<std::byte>(name); }

const std::string &DeviceModule::name() const { return require("name").name; }

std::vector<std::string> DeviceModule::function_names() const {
    const detail::ModuleImpl &m = require("function_names");
    if (!m.loaded) {
        std::vector<std::string> names;
        for (const ir::Kernel &k : m.ir_kernels) names.push_back(k.name);
        return names;
    }
    if (!m.ptx.entries.empty()) {
        std::vector<std::string> names;
        for (const auto &e : m.ptx.entries) names.push_back(e.name);
        return names;
    }
    return m.loaded->function_names();
}

std::vector<std::string> DeviceModule::global_names() const { return require("global_names").ptx.globals; }

DeviceContext DeviceModule::context() const { return DeviceContext(require("context").context); }

} // namespace ember
