// ROCm's own code-object library (libamd_comgr.so.2; Debian 12: libamd-comgr2, installed with
// libamdhip64-5), loaded with dlopen, reads the metadata of ember's AMDGPU code objects: for every
// kernel, the explicit arguments must be ember's kernarg layout (the parameters in order at their
// natural alignment, named as in the IR), and the figures ember's compile reports read from the
// same note (amdgpu_kernel_info: wave size, LDS, scratch, kernarg bytes, registers) must be the
// ones comgr reads. Skips, saying so, where the library or the AMDGPU back end is missing.
#include "ember/compiler/CacheSupport.h"
#include "ember/compiler/Compiler.h"
#include "ember/compiler/IR.h"
#include "ember/compiler/IRPrinter.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

using namespace ember;

namespace {

/// The few comgr entry points this test calls (amd_comgr.h, comgr 2.x): handles are structs of
/// one uint64_t passed by value, statuses are 0 for success.
struct Comgr {
    struct Handle {
        uint64_t handle;
    };
    using Status = int;
    static constexpr int kExecutable = 0x8;                    // AMD_COMGR_DATA_KIND_EXECUTABLE
    static constexpr int kString = 0x1;                          // AMD_COMGR_METADATA_KIND_STRING
    Status (*create_data)(int, Handle *) = nullptr;
    Status (*set_data)(Handle, size_t, const char *) = nullptr;
    Status (*release_data)(Handle) = nullptr;
    Status (*get_data_metadata)(Handle, Handle *) = nullptr;
    Status (*metadata_lookup)(Handle, const char *, Handle *) = nullptr;
    Status (*get_metadata_kind)(Handle, int *) = nullptr;
    Status (*get_metadata_string)(Handle, size_t *, char *) = nullptr;
    Status (*get_metadata_list_size)(Handle, size_t *) = nullptr;
    Status (*index_list_metadata)(Handle, size_t, Handle *) = nullptr;
    Status (*destroy_metadata)(Handle) = nullptr;

    static const Comgr *get() {
        static const std::optional<Comgr> c = []() -> std::optional<Comgr> {
            void *h = dlopen("libamd_comgr.so.2", RTLD_NOW | RTLD_LOCAL);
            if (!h) return std::nullopt;
            Comgr c;
            bool all = true;
            auto sym = [&](auto &fn, const char *name) {
                fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
                all = all && fn;
            };
            sym(c.create_data, "amd_comgr_create_data");
            sym(c.set_data, "amd_comgr_set_data");
            sym(c.release_data, "amd_comgr_release_data");
            sym(c.get_data_metadata, "amd_comgr_get_data_metadata");
            sym(c.metadata_lookup, "amd_comgr_metadata_lookup");
            sym(c.get_metadata_kind, "amd_comgr_get_metadata_kind");
            sym(c.get_metadata_string, "amd_comgr_get_metadata_string");
            sym(c.get_metadata_list_size, "amd_comgr_get_metadata_list_size");
            sym(c.index_list_metadata, "amd_comgr_index_list_metadata");
            sym(c.destroy_metadata, "amd_comgr_destroy_metadata");
            return all ? std::optional<Comgr>(c) : std::nullopt;
        }();
        return c ? &*c : nullptr;
    }

    /// The string of `key` in the map `node`, "" when absent.
    std::string text(Handle node, const char *key) const {
        Handle v{};
        if (metadata_lookup(node, key, &v) != 0) return "";
        std::string out;
        int kind = 0;
        size_t size = 0;
        if (get_metadata_kind(v, &kind) == 0 && kind == kString && get_metadata_string(v, &size, nullptr) == 0 && size) {
            out.resize(size);
            get_metadata_string(v, &size, out.data());
            out.resize(size - 1); // the NUL
        }
        destroy_metadata(v);
        return out;
    }
    int64_t number(Handle node, const char *key) const {
        const std::string t = text(node, key);
        return t.empty() ? -1 : std::stoll(t);
    }
    /// The elements of the list `key` of `node` (destroyed by the caller).
    std::vector<Handle> list(Handle node, const char *key) const {
        std::vector<Handle> out;
        Handle l{};
        size_t n = 0;
        if (metadata_lookup(node, key, &l) != 0) return out;
        if (get_metadata_list_size(l, &n) == 0)
            for (size_t i = 0; i < n; ++i) {
                Handle e{};
                if (index_list_metadata(l, i, &e) == 0) out.push_back(e);
            }
        destroy_metadata(l);
        return out;
    }
};

const char *kKernels = R"(
kernel @mixed(%out: ptr<global f32>, %n: i64, %s: f32, %flag: bool, %h: f16, %k: i32, %d: f64) {
  if (cast<i64>(thread_idx.x) < %n) {
    %out[cast<i64>(thread_idx.x)] = ((%s + cast<f32>(%h)) + cast<f32>(%k))
  }
  %out[0:i64] = cast<f32>(%d)
}
)";

int64_t size_of(const ir::Type &t) { return t.is_pointer() ? 8 : int64_t(t.bits() == 1 ? 1 : t.bits() / 8); }

TEST(AmdgpuComgrTest, RocmsLibraryReadsEmbersLayoutAndFigures) {
    if (target_cache_key(TargetSpec::parse("amdgpu:gfx942")).rfind("unavailable:", 0) == 0)
        GTEST_SKIP() << "this build has no AMDGPU back end";
    const Comgr *comgr = Comgr::get();
    if (!comgr) GTEST_SKIP() << "libamd_comgr.so.2 (Debian: libamd-comgr2) is not installed";
    const ir::Module m = ir::parse_module(kKernels, "AmdgpuComgrTest");
    ASSERT_EQ(m.kernels.size(), 1u);
    const ir::Kernel &k = m.kernels[0];
    for (auto [arch, wave] : {std::pair{"amdgpu:gfx90a", 64}, {"amdgpu:gfx942", 64}, {"amdgpu:gfx1100", 32}}) {
        SCOPED_TRACE(arch);
        const CompiledKernel ck = compile(k, TargetSpec::parse(arch));
        Comgr::Handle data{}, meta{};
        ASSERT_EQ(comgr->create_data(Comgr::kExecutable, &data), 0);
        ASSERT_EQ(comgr->set_data(data, ck.binary.size(), ck.binary.data()), 0);
        ASSERT_EQ(comgr->get_data_metadata(data, &meta), 0) << "comgr cannot read the metadata";
        const std::vector<Comgr::Handle> kernels = comgr->list(meta, "amdhsa.kernels");
        ASSERT_EQ(kernels.size(), 1u);
        const Comgr::Handle kn = kernels[0];
        EXPECT_EQ(comgr->text(kn, ".name"), "mixed");
        EXPECT_EQ(comgr->number(kn, ".wavefront_size"), wave);
        // ember's layout: each parameter at its natural alignment, named as in the IR.
        const std::vector<Comgr::Handle> args = comgr->list(kn, ".args");
        int64_t offset = 0;
        size_t explicit_args = 0;
        for (const Comgr::Handle a : args) {
            if (comgr->text(a, ".value_kind").rfind("hidden_", 0) == 0) continue;
            ASSERT_LT(explicit_args, k.params.size());
            const ir::VariableRef &p = k.params[explicit_args++];
            const int64_t size = size_of(p->type);
            offset = (offset + size - 1) / size * size;
            EXPECT_EQ(comgr->text(a, ".name"), p->name);
            EXPECT_EQ(comgr->number(a, ".offset"), offset) << p->name;
            EXPECT_EQ(comgr->number(a, ".size"), size) << p->name;
            offset += size;
        }
        EXPECT_EQ(explicit_args, k.params.size());
        // The figures of ember's compile report, from the same note.
        const std::optional<AmdgpuKernelInfo> info = amdgpu_kernel_info(ck.binary, "mixed");
        ASSERT_TRUE(info.has_value());
        EXPECT_EQ(info->wavefront_size, comgr->number(kn, ".wavefront_size"));
        EXPECT_EQ(info->group_segment_bytes, comgr->number(kn, ".group_segment_fixed_size"));
        EXPECT_EQ(info->private_segment_bytes, comgr->number(kn, ".private_segment_fixed_size"));
        EXPECT_EQ(info->kernarg_segment_bytes, comgr->number(kn, ".kernarg_segment_size"));
        EXPECT_EQ(info->vgprs, comgr->number(kn, ".vgpr_count"));
        EXPECT_EQ(info->sgprs, comgr->number(kn, ".sgpr_count"));
        for (Comgr::Handle a : args) comgr->destroy_metadata(a);
        for (Comgr::Handle n : kernels) comgr->destroy_metadata(n);
        comgr->destroy_metadata(meta);
        comgr->release_data(data);
    }
}

} // namespace
