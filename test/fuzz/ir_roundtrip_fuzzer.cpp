/// \file
/// libFuzzer harness: the textual IR parser, the verifier and the printer ([Note] Textual IR).
///
/// For any input: parsing either throws a typed ember error or returns a module whose kernels and
/// functions the verifier accepts. Then the round trip must be exact: the printed module parses
/// again, and prints to the same text; every kernel printed alone parses alone, prints the same,
/// and has the same content hash as the kernel it came from. Anything else is a finding
/// ([Note] Fuzzing outcomes in FuzzSupport.h).
#include "FuzzSupport.h"

#include "ember/compiler/Hash.h"
#include "ember/compiler/IRPrinter.h"
#include "ember/compiler/Verifier.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace {

using ember::fuzz::expected_outcome;
using ember::fuzz::finding;

std::string joined(const std::vector<std::string> &problems) {
    std::string out;
    for (const std::string &p : problems) out += p + "\n";
    return out;
}

/// Parses text the printer wrote: it must parse, or the printer and the parser disagree.
ember::ir::Module reparse(const std::string &printed, std::string_view what) {
    ember::ir::Module m;
    try {
        m = ember::ir::parse_module(printed, "<printed>");
    } catch (const ember::InternalError &e) {
        finding(std::string(what) + ": ember::InternalError while parsing printed IR",
                std::string(e.what()) + "\n--- printed:\n" + printed);
    } catch (const ember::Error &e) {
        finding(std::string(what) + ": the printed IR does not parse",
                std::string(e.what()) + "\n--- printed:\n" + printed);
    }
    return m;
}

void check_same(const std::string &first, const std::string &second, std::string_view what) {
    if (first != second)
        finding(std::string(what) + ": print -> parse -> print changed the text",
                "--- first print:\n" + first + "--- second print:\n" + second);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ember::ir::Module module;
    if (!ember::fuzz::parse_input(data, size, module)) return 0;

    // The parser's result is verified: the verifier must agree.
    for (const ember::ir::Kernel &k : module.kernels) {
        std::vector<std::string> problems;
        expected_outcome("verify", [&] { problems = ember::ir::verify(k); });
        if (!problems.empty())
            finding("the parser accepted kernel @" + k.name + ", the verifier rejects it", joined(problems));
    }
    for (const ember::ir::FunctionRef &f : module.functions) {
        std::vector<std::string> problems;
        expected_outcome("verify", [&] { problems = ember::ir::verify(*f); });
        if (!problems.empty())
            finding("the parser accepted function @" + f->name + ", the verifier rejects it", joined(problems));
    }

    // The whole module: print, parse, print.
    std::string first;
    expected_outcome("print", [&] { first = ember::ir::print(module); });
    const ember::ir::Module again = reparse(first, "module");
    std::string second;
    expected_outcome("print", [&] { second = ember::ir::print(again); });
    check_same(first, second, "module");
    if (again.kernels.size() != module.kernels.size() || again.functions.size() != module.functions.size())
        finding("module: the reparsed module has other kernels or functions", first);

    // Each kernel alone (preceded by the functions it calls): same text, same content hash.
    for (size_t i = 0; i < module.kernels.size(); ++i) {
        const ember::ir::Kernel &k = module.kernels[i];
        std::string alone, hash;
        expected_outcome("print", [&] {
            alone = ember::ir::print(k);
            hash = ember::ir::content_hash(k);
        });
        const ember::ir::Module single = reparse(alone, "kernel @" + k.name);
        if (single.kernels.size() != 1) finding("kernel @" + k.name + ": printed alone, it parses to another count of kernels", alone);
        std::string alone_again, hash_again, hash_of_reparsed_module;
        expected_outcome("print", [&] {
            alone_again = ember::ir::print(single.kernels[0]);
            hash_again = ember::ir::content_hash(single.kernels[0]);
            hash_of_reparsed_module = ember::ir::content_hash(again.kernels[i]);
        });
        check_same(alone, alone_again, "kernel @" + k.name);
        if (hash != hash_again || hash != hash_of_reparsed_module)
            finding("kernel @" + k.name + ": the content hash changed over the round trip",
                    hash + " / " + hash_again + " / " + hash_of_reparsed_module + "\n--- printed:\n" + alone);
    }
    return 0;
}
