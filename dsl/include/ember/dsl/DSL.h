/// \file
/// Everything a kernel author needs: values, SIMD vectors, pointers, special registers, control
/// flow, the warp's matrix operations, kernel().
#ifndef EMBER_DSL_DSL_H
#define EMBER_DSL_DSL_H

#include "ember/dsl/Builtins.h"
#include "ember/dsl/Control.h"
#include "ember/dsl/Function.h"
#include "ember/dsl/Kernel.h"
#include "ember/dsl/Matrix.h"
#include "ember/dsl/Print.h"
#include "ember/dsl/SIMD.h"
#include "ember/dsl/Struct.h"
#include "ember/dsl/TensorMap.h"
#include "ember/dsl/TileTensor.h"
#include "ember/dsl/Value.h"
#include "ember/dsl/Warpgroup.h"

#endif // EMBER_DSL_DSL_H
