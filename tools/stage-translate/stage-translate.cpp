//===- stage-translate.cpp - Imports and exports of stage IR --------------===//

#include "Stage/InitAll.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  mlir::stage::registerAllTranslations();
  return mlir::failed(mlir::mlirTranslateMain(
      argc, argv, "stage translations: model import, reports, Chakra traces\n"));
}
