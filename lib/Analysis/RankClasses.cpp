//===- RankClasses.cpp - The ranks that run the same program --------------===//

#include "Stage/Analysis/RankClasses.h"

using namespace mlir;
using namespace mlir::stage;

MicrobatchesOp mlir::stage::getMicrobatches(Operation *chunk) {
  Block &body = chunk->getRegion(0).front();
  for (Operation &op : body)
    if (auto mb = dyn_cast<MicrobatchesOp>(op))
      return mb;
  return {};
}

ServeOp mlir::stage::getServe(Operation *chunk) {
  Block &body = chunk->getRegion(0).front();
  for (Operation &op : body)
    if (auto s = dyn_cast<ServeOp>(op))
      return s;
  return {};
}

StepStructure mlir::stage::getStepStructure(func::FuncOp fn) {
  StepStructure s;
  Block &entry = fn.getBody().front();
  auto pipes = entry.getOps<PipelineOp>();
  if (pipes.empty()) {
    RankClass c;
    c.chunks.push_back(fn);
    c.chunkIds.push_back(0);
    s.classes.push_back(std::move(c));
  } else {
    PipelineOp pipe = *pipes.begin();
    s.kind = pipe.getSchedule();
    s.stages = pipe.getNumPhysicalStages();
    s.virtualStages = pipe.getVirtualStages();
    s.classes.resize(s.stages);
    for (auto [p, c] : llvm::enumerate(s.classes))
      c.stage = int64_t(p);
    for (auto [j, st] : llvm::enumerate(getPipelineStages(pipe))) {
      RankClass &c = s.classes[pipe.getPhysicalStage(int64_t(j))];
      c.chunks.push_back(st);
      c.chunkIds.push_back(int64_t(j));
      ArrayRef<int64_t> l = st.getLayers();
      c.layers.push_back({l[0], l[1]});
    }
  }
  for (const RankClass &c : s.classes)
    for (Operation *chunk : c.chunks) {
      if (MicrobatchesOp mb = getMicrobatches(chunk))
        // Each of DualPipe's two copies runs half of them.
        s.microBatches = isMirrored(s.kind) ? mb.getCount().getValue() * 2
                                            : mb.getCount().getValue();
      if (ServeOp serve = getServe(chunk)) {
        s.microBatches = serve.getMicrobatches().getValue();
        s.serving = true;
      }
    }
  return s;
}
