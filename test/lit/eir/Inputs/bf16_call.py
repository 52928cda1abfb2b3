"""Prints a kernel that calls a device function with scalar bf16 arguments, constants among them,
large enough (250 branches) that LLVM keeps the calls instead of inlining them."""
lines = ["func @g(%a: bf16, %b: bf16, %c: bf16) -> u16 {",
         "  var %acc: f32 = cast<f32>(%a)",
         "  var %k: i32 = cast<i32>(%b)"]
for i in range(250):
    lines += [f"  if (%acc > {i}.5:f32) {{",
              f"    %acc = ((%acc * cast<f32>(%b)) + (cast<f32>(%c) / (%acc + {i}.25:f32)))",
              f"    %k = ((%k * {i + 3}:i32) ^ cast<i32>(%acc))",
              "  }"]
lines += ["  return (cast<u16>(%acc) ^ cast<u16>(%k))",
          "}",
          "kernel @bf16_call(%o: ptr<global u16>, %x: ptr<global bf16>) {",
          "  %o[0:i64] = @g(%x[0:i64], 1.5:bf16, ceil(2.25:bf16))",
          "  %o[1:i64] = @g(%x[1:i64], %x[2:i64], 0.5:bf16)",
          "}"]
print("\n".join(lines))
