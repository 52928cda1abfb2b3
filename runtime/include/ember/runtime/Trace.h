/// \file
/// The timeline a person can look at: with `EMBER_TRACE=<file.json>` in the environment, ember's
/// runtime records every compile (each stage), copy, memset, launch, graph replay, event record
/// and wait and synchronize, on the host threads that called and on the devices' streams, and
/// writes it as a Chrome trace (ui.perfetto.dev or chrome://tracing open it) when the process
/// exits normally. docs/runtime.md, "Timeline (EMBER_TRACE)", says what it holds.
#ifndef EMBER_RUNTIME_TRACE_H
#define EMBER_RUNTIME_TRACE_H

namespace ember {

/// Writes the timeline recorded so far to the file EMBER_TRACE names (replacing it whole: a
/// temporary file renamed over it, so that a reader never sees half of one). It first waits for
/// the device work traced so far that has not been waited for, to place its device spans. Later
/// events are kept and written again by the next flush or at exit. Returns true when the file
/// was written; false when EMBER_TRACE is unset (nothing is recorded then), or when the file
/// cannot be written (a warning on stderr names the path and the reason).
bool flush_trace();

} // namespace ember

#endif // EMBER_RUNTIME_TRACE_H
