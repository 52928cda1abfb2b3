/// \file
/// `ember-difftest --self-test`: checks of the reference interpreter and its float encoders.
#ifndef EMBER_TOOLS_DIFFTEST_SELFTEST_H
#define EMBER_TOOLS_DIFFTEST_SELFTEST_H

namespace ember::difftest {

/// Prints the failures and a summary; returns the exit status (0: passed).
int self_test();

} // namespace ember::difftest

#endif // EMBER_TOOLS_DIFFTEST_SELFTEST_H
