/// \file
/// Reading an AMDGPU code object's metadata note (`amdhsa.kernels`) for compile reports.
#include "ember/compiler/Compiler.h"

#ifdef EMBER_WITH_AMDGPU

#include <llvm/BinaryFormat/ELF.h>
#include <llvm/BinaryFormat/MsgPackDocument.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Support/MemoryBuffer.h>

namespace ember {

std::optional<AmdgpuKernelInfo> amdgpu_kernel_info(std::string_view code_object, std::string_view kernel) {
    auto buffer = llvm::MemoryBuffer::getMemBuffer(llvm::StringRef(code_object.data(), code_object.size()), "",
                                                   /*RequiresNullTerminator=*/false);
    auto file = llvm::object::ELF64LEObjectFile::create(buffer->getMemBufferRef());
    if (!file) {
        llvm::consumeError(file.takeError());
        return std::nullopt;
    }
    const auto &elf = file->getELFFile();
    if (elf.getHeader().e_machine != llvm::ELF::EM_AMDGPU) return std::nullopt;
    auto sections = elf.sections();
    if (!sections) {
        llvm::consumeError(sections.takeError());
        return std::nullopt;
    }
    for (const auto &section : *sections) {
        if (section.sh_type != llvm::ELF::SHT_NOTE) continue;
        llvm::Error err = llvm::Error::success();
        for (const auto &note : elf.notes(section, err)) {
            if (note.getName() != "AMDGPU" || note.getType() != llvm::ELF::NT_AMDGPU_METADATA) continue;
            llvm::ArrayRef<uint8_t> desc = note.getDesc(section.sh_addralign);
            llvm::msgpack::Document doc;
            if (!doc.readFromBlob(llvm::StringRef(reinterpret_cast<const char *>(desc.data()), desc.size()), false))
                continue;
            if (!doc.getRoot().isMap()) continue;
            auto &root = doc.getRoot().getMap();
            auto kernels = root.find(doc.getNode("amdhsa.kernels"));
            if (kernels == root.end() || !kernels->second.isArray()) continue;
            for (auto &entry : kernels->second.getArray()) {
                if (!entry.isMap()) continue;
                auto &m = entry.getMap();
                auto field = [&](const char *key) -> const llvm::msgpack::DocNode * {
                    auto it = m.find(doc.getNode(key));
                    return it == m.end() ? nullptr : &it->second;
                };
                const llvm::msgpack::DocNode *name = field(".name");
                if (!name || !name->isString() || name->getString() != llvm::StringRef(kernel.data(), kernel.size()))
                    continue;
                auto number = [&](const char *key) -> int64_t {
                    const llvm::msgpack::DocNode *n = field(key);
                    if (!n) return -1;
                    if (n->getKind() == llvm::msgpack::Type::UInt) return static_cast<int64_t>(n->getUInt());
                    if (n->getKind() == llvm::msgpack::Type::Int) return n->getInt();
                    return -1;
                };
                AmdgpuKernelInfo info;
                info.vgprs = static_cast<int>(number(".vgpr_count"));
                info.sgprs = static_cast<int>(number(".sgpr_count"));
                info.agprs = static_cast<int>(number(".agpr_count"));
                info.vgpr_spills = static_cast<int>(number(".vgpr_spill_count"));
                info.sgpr_spills = static_cast<int>(number(".sgpr_spill_count"));
                info.wavefront_size = static_cast<int>(number(".wavefront_size"));
                info.private_segment_bytes = number(".private_segment_fixed_size");
                info.group_segment_bytes = number(".group_segment_fixed_size");
                info.kernarg_segment_bytes = number(".kernarg_segment_size");
                info.max_flat_workgroup_size = static_cast<int>(number(".max_flat_workgroup_size"));
                llvm::consumeError(std::move(err));
                return info;
            }
        }
        if (err) llvm::consumeError(std::move(err));
    }
    return std::nullopt;
}

} // namespace ember

#else // !EMBER_WITH_AMDGPU

namespace ember {
std::optional<AmdgpuKernelInfo> amdgpu_kernel_info(std::string_view, std::string_view) { return std::nullopt; }
} // namespace ember

#endif
