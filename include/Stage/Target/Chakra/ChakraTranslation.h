//===- ChakraTranslation.h - stage IR to Chakra traces ----------*- C++ -*-===//

#ifndef STAGE_TARGET_CHAKRA_CHAKRATRANSLATION_H
#define STAGE_TARGET_CHAKRA_CHAKRATRANSLATION_H

namespace mlir::stage {

/// Registers `--stage-to-chakra`.
void registerToChakraTranslation();

/// The encoding threads of `--stage-to-chakra` (0: all cores).
void setTraceThreads(unsigned n);

} // namespace mlir::stage

#endif // STAGE_TARGET_CHAKRA_CHAKRATRANSLATION_H
