/// \file
/// Pitched memory, 2-D/3-D copies, copies between contexts, peer access and IPC handles: the API
/// layer over the back ends' allocate_pitched, copy_3d, copy_between, can_access_peer,
/// enable_peer_access, allocate_shareable, ipc_handle and open_ipc (Backend.h).
///
/// [Note] Copies between contexts
/// ==============================
/// `enqueue_copy(dst, src)` accepts DeviceBuffers of any context. Where the copy runs:
/// * A CPU-device buffer is host memory, for every device.
/// * On a GPU context (the one enqueue_copy was called on, or the stream's): one cuMemcpyPeerAsync
///   between buffers of two GPUs (staged through the host by the driver when peer access is off),
///   else cuMemcpyAsync (unified addressing tells host from device memory). So that the copy
///   reads what the other GPU context's earlier work wrote and that context's later work (a
///   kernel, a free) sees it, the copy first waits for the other context's default stream, and
///   that stream then waits for the copy: the copy is ordered on both, as if each had enqueued it.
/// * On the CPU device, with a GPU's buffer on either side: the copy runs on that GPU context's
///   default stream and is complete when enqueue_copy returns, as every CPU-device operation.
#include "ember/runtime/DeviceContext.h"

#include "Backend.h"
#include "ContextImpl.h"
#include "Timeline.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace ember {

namespace detail {

namespace {

bool is_gpu(const Backend *b) { return b && b->api() != "cpu"; }

std::string str(size_t v) { return std::to_string(v); }

BackendStream &stream_of(ContextImpl &ctx, StreamImpl *stream) {
    return stream ? *stream->stream : *ctx.backend->default_stream();
}

/// a * b (a + b), or LogicError naming `what`, both operands and the limit when it overflows.
[[noreturn]] void throw_overflow(const std::string &what, size_t a, const char *op, size_t b) {
    throw LogicError(what + " (" + str(a) + op + str(b) + ") overflows the address space: more than " +
                     str(std::numeric_limits<size_t>::max()) + " bytes (SIZE_MAX)");
}
size_t mul(size_t a, size_t b, const std::string &what) {
    size_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) throw_overflow(what, a, " * ", b);
    return r;
}
size_t add(size_t a, size_t b, const std::string &what) {
    size_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) throw_overflow(what, a, " + ", b);
    return r;
}

/// One side of a 2-D/3-D copy, checked: the fields named `<prefix>_...` in messages.
struct SideFields {
    const char *prefix; // "src" or "dst"
    const char *side;   // "source" or "destination"
    const CopyEndpoint *e;
    size_t x, y, z, pitch, slice_rows;
};

BackendStream::Region3D check_side(ContextImpl &ctx, const char *call, const SideFields &f, size_t width,
                                   size_t height, size_t depth, bool three_d) {
    const CopyEndpoint &e = *f.e;
    const std::string p = f.prefix;
    if (e.kind == CopyEndpoint::Kind::none)
        throw LogicError(std::string(call) + ": the " + f.side + " is not set; call set_" + p + "(...) (or set_" +
                         p + "_host / set_" + p + "_device) first");
    BackendStream::Region3D r;
    r.address = e.address;
    r.x_bytes = f.x;
    r.y = f.y;
    r.z = f.z;
    if (e.kind == CopyEndpoint::Kind::device) {
        const ContextImpl *owner = e.device->context().get();
        const bool gpu_owner = is_gpu(owner->backend.get());
        if (owner != &ctx && gpu_owner)
            throw LogicError(std::string(call) + ": the " + f.side + " " + e.what + " belongs to " +
                             two_contexts(*owner, ctx).first + " but the copy runs on " +
                             two_contexts(*owner, ctx).second + "; enqueue it on that context" +
                             " (2-D and 3-D copies reach one GPU's memory; enqueue_copy copies whole "
                             "buffers between devices)");
        // A CPU-device buffer is host memory to a GPU.
        r.device = gpu_owner;
    }
    // The pitch defaults to the memory's own (a PitchedBuffer's), else packed rows.
    r.pitch = f.pitch ? f.pitch : e.natural_pitch ? e.natural_pitch : width;
    r.rows = three_d && f.slice_rows ? f.slice_rows : height;
    const size_t row_end = add(f.x, width, p + "_x_in_bytes + width_in_bytes");
    if (row_end > r.pitch)
        throw LogicError(std::string(call) + ": " + p + "_x_in_bytes (" + str(f.x) + ") + width_in_bytes (" +
                         str(width) + ") = " + str(row_end) + " exceeds " + p + "_pitch (" + str(r.pitch) +
                         (f.pitch ? "" : e.natural_pitch ? ", the PitchedBuffer's pitch" : ", packed rows") + ")");
    if (three_d) {
        const size_t rows_end = add(f.y, height, p + "_y + height");
        if (rows_end > r.rows)
            throw LogicError(std::string(call) + ": " + p + "_y (" + str(f.y) + ") + height (" + str(height) +
                             ") = " + str(rows_end) + " exceeds " + p + "_height (" + str(r.rows) +
                             (f.slice_rows ? "" : ", the copy's height") + "), the rows of one slice");
    }
    if (e.extent_bytes || e.kind == CopyEndpoint::Kind::device) {
        // The first byte past the region: x + width + (y + height - 1) * pitch
        // + (z + depth - 1) * pitch * rows.
        const std::string what = std::string(call) + ": the " + f.side + " region";
        size_t end = row_end;
        end = add(end, mul(add(f.y, height - 1, what), r.pitch, what), what);
        end = add(end, mul(mul(add(f.z, depth - 1, what), r.pitch, what), r.rows, what), what);
        if (end > e.extent_bytes) {
            std::string where = p + "_x_in_bytes " + str(f.x) + ", " + p + "_y " + str(f.y);
            if (three_d) where += ", " + p + "_z " + str(f.z);
            where += ", height " + str(height);
            if (three_d) where += ", depth " + str(depth) + ", " + p + "_height " + str(r.rows);
            where += ", " + p + "_pitch " + str(r.pitch) + ", width_in_bytes " + str(width);
            throw LogicError(what + " ends at byte " + str(end) + " (" + where + ") but the " + f.side + " " +
                             e.what + " holds " + str(e.extent_bytes) + " bytes");
        }
    }
    return r;
}

} // namespace

[[noreturn]] void throw_pitch_not_multiple(size_t pitch, size_t element_bytes) {
    throw LogicError("pitch_elements: the pitch (" + str(pitch) + " bytes) is not a multiple of the element size (" +
                     str(element_bytes) + " bytes); index the rows in bytes instead");
}

CopyEndpoint host_endpoint(const void *p, size_t bytes, const char *what, std::shared_ptr<RawHostBuffer> keep,
                           const char *call) {
    if (!p)
        throw LogicError(std::string("Copy2D::") + call + ": the " + what +
                         " is null (an empty HostBuffer or a null pointer)");
    CopyEndpoint e;
    e.kind = CopyEndpoint::Kind::host;
    e.address = reinterpret_cast<uint64_t>(p);
    e.extent_bytes = bytes;
    e.what = what;
    e.host_buffer = std::move(keep);
    return e;
}

CopyEndpoint device_endpoint(const std::shared_ptr<RawDeviceBuffer> &raw, uint64_t address, size_t bytes,
                             size_t natural_pitch, const char *what, const char *call) {
    if (!raw)
        throw LogicError(std::string("Copy2D::") + call + ": the " + what +
                         " is empty (default-constructed or moved-from)");
    CopyEndpoint e;
    e.kind = CopyEndpoint::Kind::device;
    e.address = address;
    e.extent_bytes = bytes;
    e.natural_pitch = natural_pitch;
    e.what = what;
    e.device = raw;
    return e;
}

void enqueue_copy_3d(ContextImpl &ctx, StreamImpl *stream, const Copy3D &c, bool three_d) {
    const char *call = three_d ? "enqueue_copy_3d" : "enqueue_copy_2d";
    const size_t depth = three_d ? c.depth : 1;
    // Empty regions still need both sides set (a forgotten set_src is a bug either way).
    const bool empty = c.width_in_bytes == 0 || c.height == 0 || depth == 0;
    SideFields src{"src", "source", &c.src, c.src_x_in_bytes, c.src_y, three_d ? c.src_z : 0, c.src_pitch,
                   three_d ? c.src_height : 0};
    SideFields dst{"dst", "destination", &c.dst, c.dst_x_in_bytes, c.dst_y, three_d ? c.dst_z : 0, c.dst_pitch,
                   three_d ? c.dst_height : 0};
    if (empty) {
        for (const SideFields *f : {&src, &dst})
            if (f->e->kind == CopyEndpoint::Kind::none)
                throw LogicError(std::string(call) + ": the " + f->side + " is not set; call set_" + f->prefix +
                                 "(...) first");
        return;
    }
    BackendStream::Region3D s = check_side(ctx, call, src, c.width_in_bytes, c.height, depth, three_d);
    BackendStream::Region3D d = check_side(ctx, call, dst, c.width_in_bytes, c.height, depth, three_d);
    BackendStream &b = stream_of(ctx, stream);
    if (timeline::on()) [[unlikely]] {
        std::string name = std::string(three_d ? "copy 3D " : "copy 2D ") + (s.device ? "D" : "H") +
                           "to" + (d.device ? "D" : "H");
        const size_t bytes = c.width_in_bytes * c.height * depth; // each factor fits its regions
        timeline::stream_op(ctx, timeline::stream_of(ctx, stream), "copy", name, name,
                            timeline::Args().number("bytes", int64_t(bytes)),
                            [&] { b.copy_3d(d, s, c.width_in_bytes, c.height, depth); });
        return;
    }
    b.copy_3d(d, s, c.width_in_bytes, c.height, depth);
}

std::shared_ptr<RawDeviceBuffer> create_pitched(const std::shared_ptr<ContextImpl> &ctx, size_t width, size_t height,
                                                size_t element_bytes, size_t *pitch) {
    if (width == 0 || height == 0)
        throw LogicError("create_pitched_buffer: width " + str(width) + " and height " + str(height) + " on " +
                         ctx->label + "; both must be at least 1");
    size_t width_bytes = mul(width, element_bytes, "create_pitched_buffer: width * sizeof(T)");
    // Rows are padded to the pitch by the back end; unpadded, they must fit already.
    (void)mul(width_bytes, height, "create_pitched_buffer: width * sizeof(T) * height");
    DeviceAddress p = ctx->backend->allocate_pitched(width_bytes, height, static_cast<unsigned>(element_bytes), pitch);
    // The back end allocated pitch * height bytes, so the product fits.
    return std::make_shared<RawDeviceBuffer>(ctx, p, *pitch * height);
}

std::shared_ptr<RawDeviceBuffer> create_shareable(const std::shared_ptr<ContextImpl> &ctx, size_t n,
                                                  size_t element_bytes) {
    if (n == 0)
        throw LogicError("create_ipc_buffer: 0 elements on " + ctx->label +
                         "; a buffer shared with another process needs at least one");
    size_t bytes = mul(n, element_bytes, "create_ipc_buffer: n * sizeof(T)");
    return std::make_shared<RawDeviceBuffer>(ctx, ctx->backend->allocate_shareable(bytes), bytes);
}

IpcMemHandle ipc_handle(ContextImpl &ctx, const RawDeviceBuffer *raw, uint64_t address, size_t) {
    if (!raw) throw LogicError("ipc_handle: the DeviceBuffer is empty (default-constructed or moved-from)");
    if (raw->context().get() != &ctx) {
        auto [of, not_this] = two_contexts(*raw->context(), ctx);
        throw LogicError("ipc_handle: the DeviceBuffer belongs to " + of + ", not " + not_this +
                         "; ask its own context");
    }
    if (address != raw->address())
        throw LogicError("ipc_handle: the DeviceBuffer is a view into a buffer; share the whole buffer made by "
                         "create_ipc_buffer");
    IpcMemHandle h;
    h.api = ctx.backend->api();
    h.bytes = ctx.backend->ipc_handle(address);
    return h;
}

std::shared_ptr<RawDeviceBuffer> open_ipc(const std::shared_ptr<ContextImpl> &ctx, const IpcMemHandle &h, size_t n,
                                          size_t element_bytes) {
    if (h.api != ctx->backend->api())
        throw LogicError("open_ipc_buffer: the handle was made by api '" + h.api + "' but " + ctx->label +
                         " is api '" + ctx->backend->api() + "'; open it on a device of the same api");
    if (n == 0) throw LogicError("open_ipc_buffer: 0 elements; open at least one");
    size_t bytes = mul(n, element_bytes, "open_ipc_buffer: n * sizeof(T)");
    return std::make_shared<RawDeviceBuffer>(ctx, ctx->backend->open_ipc(h.bytes, bytes), bytes);
}

namespace {

/// Runs `copy`, which hands one copy to `on` (a stream of `owner`, the context whose device runs
/// it), with its host and device spans when EMBER_TRACE records ([Note] Timeline).
template <class F>
void across_op(const ContextImpl &owner, const std::shared_ptr<BackendStream> &on, size_t bytes,
               F &&copy) {
    if (timeline::on()) [[unlikely]]
        timeline::stream_op(owner, on, "copy", "copy between contexts", "copy between contexts",
                            timeline::Args().number("bytes", int64_t(bytes)), copy);
    else
        copy();
}

} // namespace

void copy_across_contexts(ContextImpl &ctx, StreamImpl *stream, MemSide dst_side, uint64_t dst,
                          const ContextImpl *dst_ctx, MemSide src_side, uint64_t src, const ContextImpl *src_ctx,
                          size_t bytes) {
    // The GPU whose device memory each side is; nullptr for host memory (CPU-device buffers too).
    const ContextImpl *dc = dst_side == MemSide::Device && is_gpu(dst_ctx->backend.get()) ? dst_ctx : nullptr;
    const ContextImpl *sc = src_side == MemSide::Device && is_gpu(src_ctx->backend.get()) ? src_ctx : nullptr;
    Backend *d = dc ? dc->backend.get() : nullptr;
    Backend *s = sc ? sc->backend.get() : nullptr;
    const std::shared_ptr<BackendStream> &own = timeline::stream_of(ctx, stream);
    if (!is_gpu(ctx.backend.get())) {
        if (!dc && !sc) {
            across_op(ctx, own, bytes,
                      [&] { own->copy_between(dst, nullptr, src, nullptr, bytes); });
            return;
        }
        // A GPU's memory: that GPU copies, and the copy is done when this call returns.
        const ContextImpl *gpu = dc ? dc : sc;
        // Between two GPUs: the source's work so far first (the copy runs on the destination's).
        if (dc && sc && dc != sc) sc->backend->default_stream()->synchronize();
        const std::shared_ptr<BackendStream> &g = gpu->backend->default_stream();
        across_op(*gpu, g, bytes, [&] { g->copy_between(dst, d, src, s, bytes); });
        g->synchronize();
        return;
    }
    BackendStream &b = *own;
    std::vector<const ContextImpl *> others;
    for (const ContextImpl *c : {dc, sc})
        if (c && c != &ctx && std::find(others.begin(), others.end(), c) == others.end()) others.push_back(c);
    EventOptions marker;
    marker.timing = false;
    for (const ContextImpl *o : others) {
        std::shared_ptr<BackendEvent> before = o->backend->create_event(marker);
        o->backend->default_stream()->record(*before);
        b.wait(*before);
    }
    // After the waits: the device span is the copy's, not the other contexts' work before it.
    across_op(ctx, own, bytes, [&] { b.copy_between(dst, d, src, s, bytes); });
    if (!others.empty()) {
        std::shared_ptr<BackendEvent> after = ctx.backend->create_event(marker);
        b.record(*after);
        for (const ContextImpl *o : others) o->backend->default_stream()->wait(*after);
    }
}

} // namespace detail

// ---------------------------------------------------------------------------------------------
// IpcMemHandle.

std::string IpcMemHandle::to_string() const {
    static const char digits[] = "0123456789abcdef";
    std::string s = api + ":";
    for (uint8_t b : bytes) {
        s += digits[b >> 4];
        s += digits[b & 15];
    }
    return s;
}

IpcMemHandle IpcMemHandle::from_string(std::string_view text) {
    size_t colon = text.find(':');
    if (colon == std::string_view::npos || colon == 0)
        throw LogicError("IpcMemHandle::from_string: '" + std::string(text.substr(0, 40)) +
                         "' has no api prefix; expected 'cuda:' or 'cpu:' followed by 128 hex digits");
    IpcMemHandle h;
    h.api = std::string(text.substr(0, colon));
    std::string_view hex = text.substr(colon + 1);
    if (hex.size() != 128)
        throw LogicError("IpcMemHandle::from_string: " + std::to_string(hex.size()) +
                         " hex digits after '" + h.api + ":'; a handle has 128 (64 bytes)");
    auto value = [&](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        throw LogicError(std::string("IpcMemHandle::from_string: '") + c + "' is not a hex digit");
    };
    for (size_t i = 0; i < 64; ++i)
        h.bytes[i] = static_cast<uint8_t>(value(hex[2 * i]) * 16 + value(hex[2 * i + 1]));
    return h;
}

// ---------------------------------------------------------------------------------------------
// DeviceContext and DeviceStream.

void DeviceContext::enqueue_copy_2d(const Copy2D &c) const {
    Copy3D c3;
    static_cast<Copy2D &>(c3) = c;
    detail::enqueue_copy_3d(live("enqueue_copy_2d"), nullptr, c3, false);
}
void DeviceContext::enqueue_copy_3d(const Copy3D &c) const { detail::enqueue_copy_3d(live("enqueue_copy_3d"), nullptr, c, true); }
void DeviceContext::copy_2d_sync(const Copy2D &c) const {
    enqueue_copy_2d(c);
    synchronize();
}
void DeviceContext::copy_3d_sync(const Copy3D &c) const {
    enqueue_copy_3d(c);
    synchronize();
}

bool DeviceContext::can_access(const DeviceContext &peer) const {
    return live("can_access").backend->can_access_peer(*peer.live("can_access").backend);
}
void DeviceContext::enable_peer_access(const DeviceContext &peer) const {
    live("enable_peer_access").backend->enable_peer_access(*peer.live("enable_peer_access").backend);
}
void DeviceContext::disable_peer_access(const DeviceContext &peer) const {
    live("disable_peer_access").backend->disable_peer_access(*peer.live("disable_peer_access").backend);
}

void DeviceStream::enqueue_copy_2d(const Copy2D &c) const {
    detail::StreamImpl &self = live("enqueue_copy_2d");
    Copy3D c3;
    static_cast<Copy2D &>(c3) = c;
    detail::enqueue_copy_3d(*self.context, &self, c3, false);
}
void DeviceStream::enqueue_copy_3d(const Copy3D &c) const {
    detail::StreamImpl &self = live("enqueue_copy_3d");
    detail::enqueue_copy_3d(*self.context, &self, c, true);
}

} // namespace ember
