/// \file
/// The one header users include: the DSL (kernels as C++ lambdas) and the runtime
/// (DeviceContext, buffers, launches).
#ifndef EMBER_EMBER_H
#define EMBER_EMBER_H

#include "ember/CompilerCheck.h" // first: a too-old compiler fails here, with one message

#include "ember/Error.h"
#include "ember/Version.h"
#include "ember/dsl/DSL.h"
#include "ember/runtime/Buffer.h"
#include "ember/runtime/DeviceContext.h"
#include "ember/runtime/DevicePassable.h"
#include "ember/runtime/Function.h"
#include "ember/runtime/Memory.h"
#include "ember/runtime/Module.h"
#include "ember/runtime/TensorMap.h"
#include "ember/runtime/TileTensor.h"
#include "ember/runtime/Trace.h"

#endif // EMBER_EMBER_H
