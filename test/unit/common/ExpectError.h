/// \file
/// Expecting a typed ember error whose message names what it must.
#ifndef EMBER_TEST_UNIT_COMMON_EXPECTERROR_H
#define EMBER_TEST_UNIT_COMMON_EXPECTERROR_H

#include "ember/Error.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

namespace ember::testing {

/// Runs `f`, expecting an exception of type E whose message contains every part.
template <class E, class F> void expect_error(F &&f, std::initializer_list<std::string> parts) {
    try {
        f();
        ADD_FAILURE() << "no exception of the expected type";
    } catch (const E &e) {
        for (const std::string &p : parts)
            EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << "missing '" << p << "' in: " << e.what();
    }
}

template <class F> void expect_logic_error(F &&f, std::initializer_list<std::string> parts) {
    expect_error<LogicError>(f, parts);
}

} // namespace ember::testing

#endif // EMBER_TEST_UNIT_COMMON_EXPECTERROR_H
