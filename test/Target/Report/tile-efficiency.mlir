// A multiplication loses what its tiles pad and its last wave leaves idle
// (docs/CostModel.md, e_tile): on the a100-80gb profile (108 SMs, 256 x 128
// tiles, 312 TFLOP/s at 86.9%) GPT 18B's tensor-parallel QKV projection,
// 2048 tokens x 6144 -> 2304, is 8 x 18 = 144 tiles, two waves of 108, so
// its forward runs at 144/216 of the best shape's rate. Its weight
// gradient, 6144 x 2304 results, is 24 x 18 = 432 tiles, four whole waves:
// no loss. The oracle is computed here from the profile's numbers.
//
// RUN: stage-opt %s --stage-train="dp=1" -o %t.mlir
// RUN: stage-translate %t.mlir --stage-to-report --format=json --device=a100-80gb -o %t.json
// RUN: %python -c "import json,sys; p=json.load(open(sys.argv[1])); r=json.load(open(sys.argv[2])); v=lambda k: p[k]['value']; rate=v('matrix_flops')*v('matmul_efficiency'); f=2*2048*6144*2304; steps=r['pipeline']['timeline'][0]; fwd=steps[0]['end']-steps[0]['start']; bwd=steps[1]['end']-steps[1]['start']; print('forward', abs(fwd/(f/(rate*144/216))-1) < 1e-6); print('backward', abs(bwd/(f/rate)-1) < 1e-6)" %stage_src/profiles/a100-80gb.json %t.json | FileCheck %s
// CHECK: forward True
// CHECK: backward True
//
// A profile without a tile computes every shape at the best shape's rate.
// RUN: %python -c "import json,sys; p=json.load(open(sys.argv[1])); p['name']='a100-untiled'; p['matmul_tile_rows']['value']=0; json.dump(p, open(sys.argv[2],'w'))" %stage_src/profiles/a100-80gb.json %t.untiled.json
// RUN: stage-translate %t.mlir --stage-to-report --format=json --device-profile=%t.untiled.json -o %t.untiled.report.json
// RUN: %python -c "import json,sys; p=json.load(open(sys.argv[1])); r=json.load(open(sys.argv[2])); v=lambda k: p[k]['value']; rate=v('matrix_flops')*v('matmul_efficiency'); f=2*2048*6144*2304; s=r['pipeline']['timeline'][0][0]; print('untiled', abs((s['end']-s['start'])/(f/rate)-1) < 1e-6)" %stage_src/profiles/a100-80gb.json %t.untiled.report.json | FileCheck %s --check-prefix=UNTILED
// UNTILED: untiled True

module attributes {stage.bindings = {B = 1, S = 2048, D = 6144, N = 2304}} {
  func.func @qkv(%x: !stage.tensor<[B, S, D], bf16>) -> !stage.tensor<[B, S, N], bf16> {
    %w = stage.param "w" : !stage.tensor<[D, N], bf16>
    %y = stage.einsum "bsd,dn->bsn" %x, %w : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[D, N], bf16>) -> !stage.tensor<[B, S, N], bf16>
    return %y : !stage.tensor<[B, S, N], bf16>
  }
}
