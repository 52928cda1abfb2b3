/// \file
/// The seed's detect_gpu: say whether this machine has a GPU. ember decides at run time (one
/// binary serves machines with and without GPUs), where Mojo decides at compile time.
#include "ember/ember.h"

#include <iostream>

int main() {
    if (ember::has_accelerator()) {
        std::cout << "GPU detected\n";
        // Enable GPU processing.
    } else {
        std::cout << "No GPU detected\n";
        // Print an error or fall back to the CPU device.
    }
    return 0;
}
