// RUN: stage-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{element type must be an integer or float type, got 'index'}}
func.func private @f(!stage.tensor<[B], index>)

// -----

// expected-error @+1 {{dimension 0 is 0; constant dimensions must be positive integers}}
func.func private @f(!stage.tensor<[0], f32>)

// -----

// expected-error @+1 {{dimension 1 is 1/2; constant dimensions must be positive integers}}
func.func private @f(!stage.tensor<[B, 1/2], f32>)

// -----

// expected-error @+1 {{invalid expression: cannot divide by the sum 'S + D': divisors must be monomials}}
func.func private @f(!stage.tensor<[B/(S + D)], f32>)

// -----

// MLIR has no `^` token: a power ended the expression and the error was
// "expected ']'".
// expected-error @+1 {{invalid expression: '^' is not an operator in the IR: a power is written as a product (S*S)}}
func.func private @f(!stage.tensor<[B, S^100000], f32>)

// -----

// A constant that would not print back as a 64-bit integer (found by
// fuzzing the expression parser).
// expected-error @+1 {{invalid expression: the constant 18446744073709551616 does not fit in 64 bits}}
func.func private @f(!stage.tensor<[B*4294967296*4294967296], f32>)

// -----

// expected-error @+1 {{axis 'tp' appears more than once in the sharding}}
func.func private @f() attributes {s = #stage.sharding<[[tp], [tp]]>}

// -----

// expected-error @+1 {{needs at least one axis}}
stage.grid @grid []

// -----

// expected-error @+1 {{axis 'tp' is declared twice}}
stage.grid @grid [dp, tp, tp]

// -----

// expected-error @+1 {{axis name 'a.b' is not an identifier}}
stage.grid @grid [a.b]

// -----

// expected-error @+1 {{unknown kind 'momentum'; expected weight, master, exp_avg, exp_avg_sq, grad or buffer}}
%0 = stage.param "w" kind "momentum" : !stage.tensor<[D], f32>

// -----

// expected-error @+1 {{needs a non-empty name}}
%0 = stage.param "" : !stage.tensor<[D], f32>

// -----

func.func @f(%a: !stage.tensor<[B, D], bf16>, %b: !stage.tensor<[D, F], bf16>) {
  // expected-error @+1 {{spec 'bd,df' must contain exactly one '->'}}
  %0 = stage.einsum "bd,df" %a, %b : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, F], bf16>) -> !stage.tensor<[B, F], bf16>
  return
}

// -----

func.func @f(%a: !stage.tensor<[B, D], bf16>, %b: !stage.tensor<[D, F], bf16>) {
  // expected-error @+1 {{spec 'b1,df->bf' has '1'; indices are letters}}
  %0 = stage.einsum "b1,df->bf" %a, %b : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, F], bf16>) -> !stage.tensor<[B, F], bf16>
  return
}

// -----

func.func @f(%a: !stage.tensor<[D, D], bf16>) {
  // expected-error @+1 {{index 'd' repeats within the term 'dd' of spec 'dd->d'}}
  %0 = stage.einsum "dd->d" %a : (!stage.tensor<[D, D], bf16>) -> !stage.tensor<[D], bf16>
  return
}

// -----

func.func @f(%a: !stage.tensor<[B, D], bf16>) {
  // expected-error @+1 {{spec 'bd,df->bf' has 2 input terms but the op has 1 operands}}
  %0 = stage.einsum "bd,df->bf" %a : (!stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, F], bf16>
  return
}

// -----

func.func @f(%a: !stage.tensor<[B, D], bf16>, %b: !stage.tensor<[D, F], bf16>) {
  // expected-error @+1 {{operand 0 has rank 2 but its term 'bsd' has 3 indices}}
  %0 = stage.einsum "bsd,df->bsf" %a, %b : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, F], bf16>) -> !stage.tensor<[B, F], bf16>
  return
}

// -----

func.func @f(%a: !stage.tensor<[B, D], bf16>, %b: !stage.tensor<[F, D], bf16>) {
  // expected-error @+1 {{index 'd' has extent D in operand 0 but F in operand 1}}
  %0 = stage.einsum "bd,df->bf" %a, %b : (!stage.tensor<[B, D], bf16>, !stage.tensor<[F, D], bf16>) -> !stage.tensor<[B, F], bf16>
  return
}

// -----

func.func @f(%a: !stage.tensor<[B, D], bf16>, %b: !stage.tensor<[D, F], bf16>) {
  // expected-error @+1 {{result has rank 2 but its term 'f' has 1 indices}}
  %0 = stage.einsum "bd,df->f" %a, %b : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, F], bf16>) -> !stage.tensor<[B, F], bf16>
  return
}

// -----

func.func @f(%a: !stage.tensor<[B, D], bf16>, %b: !stage.tensor<[D, F], bf16>) {
  // expected-error @+1 {{result index 'x' appears in no operand of spec 'bd,df->bx'}}
  %0 = stage.einsum "bd,df->bx" %a, %b : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, F], bf16>) -> !stage.tensor<[B, F], bf16>
  return
}

// -----

func.func @f(%a: !stage.tensor<[B, D], bf16>, %b: !stage.tensor<[D, F], bf16>) {
  // expected-error @+1 {{result dimension 1 (index 'f') is D but the operands give F}}
  %0 = stage.einsum "bd,df->bf" %a, %b : (!stage.tensor<[B, D], bf16>, !stage.tensor<[D, F], bf16>) -> !stage.tensor<[B, D], bf16>
  return
}

// -----

func.func @f(%a: !stage.tensor<[B], bf16>) {
  // expected-error @+1 {{'add' takes 2 operand(s), got 1}}
  %0 = stage.ewise add %a : (!stage.tensor<[B], bf16>) -> !stage.tensor<[B], bf16>
  return
}

// -----

func.func @f(%a: !stage.tensor<[B, S], bf16>, %b: !stage.tensor<[B], bf16>) {
  // expected-error @+1 {{operand 1 has shape [B], which is not a trailing part of the result shape [B, S]}}
  %0 = stage.ewise mul %a, %b : (!stage.tensor<[B, S], bf16>, !stage.tensor<[B], bf16>) -> !stage.tensor<[B, S], bf16>
  return
}

// -----

func.func @f(%a: !stage.tensor<[B], bf16>, %b: !stage.tensor<[B], f32>) {
  // expected-error @+1 {{operand 1 has element type 'f32' but the result has 'bf16' (convert with 'cast')}}
  %0 = stage.ewise mul %a, %b : (!stage.tensor<[B], bf16>, !stage.tensor<[B], f32>) -> !stage.tensor<[B], bf16>
  return
}

// -----

func.func @f(%a: !stage.tensor<[B], bf16>) {
  // expected-error @+1 {{'flops_per_element' is only for 'generic'}}
  %0 = stage.ewise exp %a {flops_per_element = 3} : (!stage.tensor<[B], bf16>) -> !stage.tensor<[B], bf16>
  return
}

// -----

func.func @f(%a: !stage.tensor<[B, S], f32>) {
  // expected-error @+1 {{dims must be increasing and below the rank 2}}
  %0 = stage.reduce sum %a dims [2] : !stage.tensor<[B, S], f32> -> !stage.tensor<[B], f32>
  return
}

// -----

func.func @f(%a: !stage.tensor<[B, S], f32>) {
  // expected-error @+1 {{result shape [S] should be [B]}}
  %0 = stage.reduce max %a dims [1] : !stage.tensor<[B, S], f32> -> !stage.tensor<[S], f32>
  return
}

// -----

func.func @f(%a: !stage.tensor<[B, S], f32>) {
  // expected-error @+1 {{dim 2 is out of range}}
  %0 = stage.softmax %a dim 2 : !stage.tensor<[B, S], f32>
  return
}

// -----

func.func @f(%a: !stage.tensor<[], f32>) {
  // expected-error @+1 {{needs an operand of rank at least 1}}
  %0 = stage.norm rms %a : (!stage.tensor<[], f32>) -> !stage.tensor<[], f32>
  return
}

// -----

func.func @f(%a: !stage.tensor<[B, D], f32>) {
  // expected-error @+1 {{result shape must equal the operand shape}}
  %0 = stage.norm rms %a : (!stage.tensor<[B, D], f32>) -> !stage.tensor<[D, B], f32>
  return
}

// -----

func.func @f(%a: !stage.tensor<[B, D], f32>, %w: !stage.tensor<[B], f32>) {
  // expected-error @+1 {{weight and bias must have shape [D], got [B]}}
  %0 = stage.norm layer %a weight %w : (!stage.tensor<[B, D], f32>, !stage.tensor<[B], f32>) -> !stage.tensor<[B, D], f32>
  return
}

// -----

func.func @f(%a: !stage.tensor<[B, D], f32>, %w: !stage.tensor<[D], f32>) {
  // expected-error @+1 {{rms normalization has no bias}}
  %0 = stage.norm rms %a weight %w bias %w : (!stage.tensor<[B, D], f32>, !stage.tensor<[D], f32>, !stage.tensor<[D], f32>) -> !stage.tensor<[B, D], f32>
  return
}

// -----

func.func @f(%t: !stage.tensor<[V], bf16>, %i: !stage.tensor<[B], i32>) {
  // expected-error @+1 {{table must have rank 2, got [V]}}
  %0 = stage.embedding %t, %i : (!stage.tensor<[V], bf16>, !stage.tensor<[B], i32>) -> !stage.tensor<[B, V], bf16>
  return
}

// -----

func.func @f(%t: !stage.tensor<[V, D], bf16>, %i: !stage.tensor<[B], f32>) {
  // expected-error @+1 {{ids must have an integer element type}}
  %0 = stage.embedding %t, %i : (!stage.tensor<[V, D], bf16>, !stage.tensor<[B], f32>) -> !stage.tensor<[B, D], bf16>
  return
}

// -----

func.func @f(%t: !stage.tensor<[V, D], bf16>, %i: !stage.tensor<[B], i32>) {
  // expected-error @+1 {{result shape [B, V] should be [B, D]}}
  %0 = stage.embedding %t, %i : (!stage.tensor<[V, D], bf16>, !stage.tensor<[B], i32>) -> !stage.tensor<[B, V], bf16>
  return
}

// -----

func.func @f(%t: !stage.tensor<[V, D], bf16>, %i: !stage.tensor<[B], i32>) {
  // expected-error @+1 {{result element type must be the table's}}
  %0 = stage.embedding %t, %i : (!stage.tensor<[V, D], bf16>, !stage.tensor<[B], i32>) -> !stage.tensor<[B, D], f32>
  return
}

// -----

func.func @f(%l: !stage.tensor<[], bf16>, %t: !stage.tensor<[], i32>) {
  // expected-error @+1 {{logits need a class dimension}}
  %0 = stage.cross_entropy %l, %t : (!stage.tensor<[], bf16>, !stage.tensor<[], i32>) -> !stage.tensor<[], f32>
  return
}

// -----

func.func @f(%l: !stage.tensor<[B, V], bf16>, %t: !stage.tensor<[B], bf16>) {
  // expected-error @+1 {{labels must have an integer element type}}
  %0 = stage.cross_entropy %l, %t : (!stage.tensor<[B, V], bf16>, !stage.tensor<[B], bf16>) -> !stage.tensor<[], f32>
  return
}

// -----

func.func @f(%l: !stage.tensor<[B, V], bf16>, %t: !stage.tensor<[V], i32>) {
  // expected-error @+1 {{labels shape [V] should be [B]}}
  %0 = stage.cross_entropy %l, %t : (!stage.tensor<[B, V], bf16>, !stage.tensor<[V], i32>) -> !stage.tensor<[], f32>
  return
}

// -----

func.func @f(%l: !stage.tensor<[B, V], bf16>, %t: !stage.tensor<[B], i32>) {
  // expected-error @+1 {{the loss is a scalar (rank 0)}}
  %0 = stage.cross_entropy %l, %t : (!stage.tensor<[B, V], bf16>, !stage.tensor<[B], i32>) -> !stage.tensor<[B], f32>
  return
}

// -----

func.func @f(%q: !stage.tensor<[B, S, D], bf16>) {
  // expected-error @+1 {{query must be [batch, seq, heads, head_dim], got [B, S, D]}}
  %0 = stage.attention %q, %q, %q : (!stage.tensor<[B, S, D], bf16>, !stage.tensor<[B, S, D], bf16>, !stage.tensor<[B, S, D], bf16>) -> !stage.tensor<[B, S, D], bf16>
  return
}

// -----

func.func @f(%q: !stage.tensor<[B, S, H, Dh], bf16>, %k: !stage.tensor<[M, S, H, Dh], bf16>) {
  // expected-error @+1 {{query, key and value must have the same batch}}
  %0 = stage.attention %q, %k, %k : (!stage.tensor<[B, S, H, Dh], bf16>, !stage.tensor<[M, S, H, Dh], bf16>, !stage.tensor<[M, S, H, Dh], bf16>) -> !stage.tensor<[B, S, H, Dh], bf16>
  return
}

// -----

func.func @f(%q: !stage.tensor<[B, S, H, Dh], bf16>, %k: !stage.tensor<[B, S, KV, Dh], bf16>, %v: !stage.tensor<[B, S, H, Dh], bf16>) {
  // expected-error @+1 {{key [B, S, KV, Dh] and value [B, S, H, Dh] must agree in sequence and heads}}
  %0 = stage.attention %q, %k, %v : (!stage.tensor<[B, S, H, Dh], bf16>, !stage.tensor<[B, S, KV, Dh], bf16>, !stage.tensor<[B, S, H, Dh], bf16>) -> !stage.tensor<[B, S, H, Dh], bf16>
  return
}

// -----

func.func @f(%q: !stage.tensor<[B, S, H, Dh], bf16>, %k: !stage.tensor<[B, S, H, Dk], bf16>) {
  // expected-error @+1 {{query and key head dims differ: Dh vs Dk}}
  %0 = stage.attention %q, %k, %k : (!stage.tensor<[B, S, H, Dh], bf16>, !stage.tensor<[B, S, H, Dk], bf16>, !stage.tensor<[B, S, H, Dk], bf16>) -> !stage.tensor<[B, S, H, Dh], bf16>
  return
}

// -----

func.func @f(%q: !stage.tensor<[B, S, H, Dh], bf16>, %v: !stage.tensor<[B, S, H, Dv], bf16>) {
  // expected-error @+1 {{result shape [B, S, H, Dh] should be [B, S, H, Dv]}}
  %0 = stage.attention %q, %q, %v : (!stage.tensor<[B, S, H, Dh], bf16>, !stage.tensor<[B, S, H, Dh], bf16>, !stage.tensor<[B, S, H, Dv], bf16>) -> !stage.tensor<[B, S, H, Dh], bf16>
  return
}

// -----

func.func @f(%q: !stage.tensor<[B, S, H, Dh], bf16>) {
  // expected-error @+1 {{window must be a positive number of keys, got 0}}
  %0 = stage.attention %q, %q, %q causal window <0> : (!stage.tensor<[B, S, H, Dh], bf16>, !stage.tensor<[B, S, H, Dh], bf16>, !stage.tensor<[B, S, H, Dh], bf16>) -> !stage.tensor<[B, S, H, Dh], bf16>
  return
}

// -----

func.func @f(%q: !stage.tensor<[B, S, H, Dh], bf16>) {
  // expected-error @+1 {{window must be a positive number of keys, got -4}}
  %0:3 = stage.attention_grad %q, %q, %q, %q, %q causal window <-4> : (!stage.tensor<[B, S, H, Dh], bf16>, !stage.tensor<[B, S, H, Dh], bf16>, !stage.tensor<[B, S, H, Dh], bf16>, !stage.tensor<[B, S, H, Dh], bf16>, !stage.tensor<[B, S, H, Dh], bf16>) -> (!stage.tensor<[B, S, H, Dh], bf16>, !stage.tensor<[B, S, H, Dh], bf16>, !stage.tensor<[B, S, H, Dh], bf16>)
  return
}

// -----

func.func @f(%a: !stage.tensor<[B, S, H, Dh], bf16>) {
  // expected-error @+1 {{changes the element count from B*S*H*Dh to B*S*H}}
  %0 = stage.reshape %a : !stage.tensor<[B, S, H, Dh], bf16> -> !stage.tensor<[B, S, H], bf16>
  return
}

// -----

func.func @f(%a: !stage.tensor<[B, S], bf16>) {
  // expected-error @+1 {{cannot change the element type}}
  %0 = stage.reshape %a : !stage.tensor<[B, S], bf16> -> !stage.tensor<[B*S], f32>
  return
}

// -----

func.func @f(%a: !stage.tensor<[B, S], bf16>) {
  // expected-error @+1 {{permutation has 3 entries for rank 2}}
  %0 = stage.transpose %a [0, 1, 2] : !stage.tensor<[B, S], bf16> -> !stage.tensor<[B, S], bf16>
  return
}

// -----

func.func @f(%a: !stage.tensor<[B, S], bf16>) {
  // expected-error @+1 {{is not a permutation}}
  %0 = stage.transpose %a [0, 0] : !stage.tensor<[B, S], bf16> -> !stage.tensor<[B, B], bf16>
  return
}

// -----

func.func @f(%a: !stage.tensor<[B, S], bf16>) {
  // expected-error @+1 {{result shape [B, S] should be [S, B]}}
  %0 = stage.transpose %a [1, 0] : !stage.tensor<[B, S], bf16> -> !stage.tensor<[B, S], bf16>
  return
}

// -----

func.func @f(%a: !stage.tensor<[B, S], bf16>) {
  // expected-error @+1 {{dim 2 is out of range}}
  %0 = stage.slice %a dim 2 offset 0 size 1 : !stage.tensor<[B, S], bf16> -> !stage.tensor<[B, S], bf16>
  return
}

// -----

func.func @f(%a: !stage.tensor<[B, S], bf16>) {
  // expected-error @+1 {{result shape [B, S] should be [B, S/2]}}
  %0 = stage.slice %a dim 1 offset 0 size S/2 : !stage.tensor<[B, S], bf16> -> !stage.tensor<[B, S], bf16>
  return
}

// -----

func.func @f(%a: !stage.tensor<[B, S], bf16>) {
  // expected-error @+1 {{slice exceeds the dimension}}
  %0 = stage.slice %a dim 1 offset S/2 size S : !stage.tensor<[B, S], bf16> -> !stage.tensor<[B, S], bf16>
  return
}

// -----

func.func @f(%a: !stage.tensor<[B, S], bf16>) {
  // expected-error @+1 {{dim 2 is out of range}}
  %0 = stage.concat %a, %a dim 2 : (!stage.tensor<[B, S], bf16>, !stage.tensor<[B, S], bf16>) -> !stage.tensor<[B, S], bf16>
  return
}

// -----

func.func @f(%a: !stage.tensor<[B, S], bf16>, %b: !stage.tensor<[B], bf16>) {
  // expected-error @+1 {{operands must have the same rank}}
  %0 = stage.concat %a, %b dim 0 : (!stage.tensor<[B, S], bf16>, !stage.tensor<[B], bf16>) -> !stage.tensor<[2*B, S], bf16>
  return
}

// -----

func.func @f(%a: !stage.tensor<[B, S], bf16>, %b: !stage.tensor<[B, D], bf16>) {
  // expected-error @+1 {{operands differ in dimension 1}}
  %0 = stage.concat %a, %b dim 0 : (!stage.tensor<[B, S], bf16>, !stage.tensor<[B, D], bf16>) -> !stage.tensor<[2*B, S], bf16>
  return
}

// -----

func.func @f(%a: !stage.tensor<[B, S], bf16>, %b: !stage.tensor<[B, D], bf16>) {
  // expected-error @+1 {{result shape [B, S] should be [B, S + D]}}
  %0 = stage.concat %a, %b dim 1 : (!stage.tensor<[B, S], bf16>, !stage.tensor<[B, D], bf16>) -> !stage.tensor<[B, S], bf16>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{needs at least one operand}}
  %0 = "stage.concat"() {dim = 0 : i64} : () -> !stage.tensor<[B], bf16>
  return
}

// -----

func.func @f(%a: !stage.tensor<[D], bf16>) {
  // expected-error @+1 {{dims must be increasing and below the result rank}}
  %0 = stage.broadcast %a dims [1, 0] : !stage.tensor<[D], bf16> -> !stage.tensor<[B, S, D], bf16>
  return
}

// -----

func.func @f(%a: !stage.tensor<[D], bf16>) {
  // expected-error @+1 {{operand shape [D] should be [S] (the result without the new dims)}}
  %0 = stage.broadcast %a dims [0, 2] : !stage.tensor<[D], bf16> -> !stage.tensor<[B, S, D], bf16>
  return
}

// -----

func.func @f(%s: !stage.tensor<[], f32>) {
  // expected-error @+1 {{scores need an expert dimension}}
  %w, %i = stage.topk %s k K : !stage.tensor<[], f32> -> !stage.tensor<[], f32>, !stage.tensor<[], i32>
  return
}

// -----

func.func @f(%s: !stage.tensor<[T, E], f32>) {
  // expected-error @+1 {{results must have shape [T, K]}}
  %w, %i = stage.topk %s k K : !stage.tensor<[T, E], f32> -> !stage.tensor<[T, E], f32>, !stage.tensor<[T, K], i32>
  return
}

// -----

func.func @f(%s: !stage.tensor<[T, E], f32>) {
  // expected-error @+1 {{indices must have an integer element type}}
  %w, %i = stage.topk %s k K : !stage.tensor<[T, E], f32> -> !stage.tensor<[T, K], f32>, !stage.tensor<[T, K], f32>
  return
}

// -----

func.func @f(%x: !stage.tensor<[T, D], bf16>, %i: !stage.tensor<[T], i32>) {
  // expected-error @+1 {{tokens and indices must have the same rank, at least 2}}
  %0 = stage.dispatch %x, %i : (!stage.tensor<[T, D], bf16>, !stage.tensor<[T], i32>) -> !stage.tensor<[E, T*K/E, D], bf16>
  return
}

// -----

func.func @f(%x: !stage.tensor<[T, D], bf16>, %i: !stage.tensor<[U, K], i32>) {
  // expected-error @+1 {{tokens and indices differ in dimension 0}}
  %0 = stage.dispatch %x, %i : (!stage.tensor<[T, D], bf16>, !stage.tensor<[U, K], i32>) -> !stage.tensor<[E, T*K/E, D], bf16>
  return
}

// -----

func.func @f(%x: !stage.tensor<[T, D], bf16>, %i: !stage.tensor<[T, K], f32>) {
  // expected-error @+1 {{indices must have an integer element type}}
  %0 = stage.dispatch %x, %i : (!stage.tensor<[T, D], bf16>, !stage.tensor<[T, K], f32>) -> !stage.tensor<[E, T*K/E, D], bf16>
  return
}

// -----

func.func @f(%x: !stage.tensor<[T, D], bf16>, %i: !stage.tensor<[T, K], i32>) {
  // expected-error @+1 {{result must be [experts, tokens per expert, D], got [E, K*T/E, F]}}
  %0 = stage.dispatch %x, %i : (!stage.tensor<[T, D], bf16>, !stage.tensor<[T, K], i32>) -> !stage.tensor<[E, T*K/E, F], bf16>
  return
}

// -----

func.func @f(%y: !stage.tensor<[E, D], bf16>, %w: !stage.tensor<[T, K], f32>, %i: !stage.tensor<[T, K], i32>) {
  // expected-error @+1 {{expert outputs must be [experts, tokens per expert, hidden], got [E, D]}}
  %0 = stage.combine %y, %w, %i : (!stage.tensor<[E, D], bf16>, !stage.tensor<[T, K], f32>, !stage.tensor<[T, K], i32>) -> !stage.tensor<[T, D], bf16>
  return
}

// -----

func.func @f(%y: !stage.tensor<[E, C, D], bf16>, %w: !stage.tensor<[T, K], f32>, %i: !stage.tensor<[T, E], i32>) {
  // expected-error @+1 {{weights and indices must have the same shape}}
  %0 = stage.combine %y, %w, %i : (!stage.tensor<[E, C, D], bf16>, !stage.tensor<[T, K], f32>, !stage.tensor<[T, E], i32>) -> !stage.tensor<[T, D], bf16>
  return
}

// -----

func.func @f(%y: !stage.tensor<[E, C, D], bf16>, %w: !stage.tensor<[T, K], f32>) {
  // expected-error @+1 {{indices must have an integer element type}}
  %0 = stage.combine %y, %w, %w : (!stage.tensor<[E, C, D], bf16>, !stage.tensor<[T, K], f32>, !stage.tensor<[T, K], f32>) -> !stage.tensor<[T, D], bf16>
  return
}

// -----

func.func @f(%y: !stage.tensor<[E, C, D], bf16>, %w: !stage.tensor<[T, K], f32>, %i: !stage.tensor<[T, K], i32>) {
  // expected-error @+1 {{result shape [T, K] should be [T, D]}}
  %0 = stage.combine %y, %w, %i : (!stage.tensor<[E, C, D], bf16>, !stage.tensor<[T, K], f32>, !stage.tensor<[T, K], i32>) -> !stage.tensor<[T, K], bf16>
  return
}

// -----

func.func @f(%x: !stage.tensor<[B], bf16>) {
  // expected-error @+1 {{body has 0 arguments; expected 1 (carried, then slices)}}
  %0 = "stage.repeat"(%x) <{count = #stage.expr<L>, operandSegmentSizes = array<i32: 1, 0>}> ({
    stage.yield %x : !stage.tensor<[B], bf16>
  }) : (!stage.tensor<[B], bf16>) -> !stage.tensor<[B], bf16>
  return
}

// -----

func.func @f(%w: !stage.tensor<[M, D], bf16>) {
  // expected-error @+1 {{slice operand 0 must have the count L as its leading dimension, got '!stage.tensor<[M, D], bf16>'}}
  stage.repeat L slice(%a = %w : !stage.tensor<[M, D], bf16>) {
    stage.yield
  }
  return
}

// -----

func.func @f(%x: !stage.tensor<[B], bf16>) {
  // expected-error @+1 {{yields 0 values but carries 1}}
  %0 = stage.repeat L carry(%a = %x : !stage.tensor<[B], bf16>) {
    stage.yield
  }
  return
}

// -----

func.func @f(%x: !stage.tensor<[B], bf16>) {
  // expected-error @+1 {{has 1 results; expected 1 carried and 1 stacked}}
  %0 = stage.repeat L carry(%a = %x : !stage.tensor<[B], bf16>) {
    stage.yield %a, %a : !stage.tensor<[B], bf16>, !stage.tensor<[B], bf16>
  }
  return
}

// -----

func.func @f(%x: !stage.tensor<[B], bf16>, %y: !stage.tensor<[D], bf16>) {
  // expected-error @+1 {{carried value 0 changes type across iterations}}
  %0 = stage.repeat L carry(%a = %x : !stage.tensor<[B], bf16>) {
    stage.yield %y : !stage.tensor<[D], bf16>
  }
  return
}

// -----

func.func @f(%x: !stage.tensor<[B], bf16>) {
  // expected-error @+1 {{stacked result 0 must have type '!stage.tensor<[L, B], bf16>'}}
  %0 = stage.repeat L -> stack(!stage.tensor<[B], bf16>) {
    stage.yield %x : !stage.tensor<[B], bf16>
  }
  return
}

// -----

func.func @f(%x: !stage.tensor<[B], bf16>) {
  // expected-error @+1 {{'@mesh' does not name a stage.grid}}
  %0 = stage.all_reduce %x on @mesh [tp] : !stage.tensor<[B], bf16>
  return
}

// -----

stage.grid @grid [dp, tp]
func.func @f(%x: !stage.tensor<[B], bf16>) {
  // expected-error @+1 {{needs at least one axis}}
  %0 = stage.all_reduce %x on @grid [] : !stage.tensor<[B], bf16>
  return
}

// -----

stage.grid @grid [dp, tp]
func.func @f(%x: !stage.tensor<[B], bf16>) {
  // expected-error @+1 {{unknown axis 'xp' of grid @grid (its axes: dp, tp)}}
  %0 = stage.all_reduce %x on @grid [xp] : !stage.tensor<[B], bf16>
  return
}

// -----

stage.grid @grid [dp, tp]
func.func @f(%x: !stage.tensor<[B], bf16>) {
  // expected-error @+1 {{axis 'tp' is listed twice}}
  %0 = stage.all_reduce %x on @grid [tp, tp] : !stage.tensor<[B], bf16>
  return
}

// -----

stage.grid @grid [dp, tp]
func.func @f(%x: !stage.tensor<[B, S/tp], bf16>) {
  // expected-error @+1 {{result dimension 1 is S/tp; expected S}}
  %0 = stage.all_gather %x on @grid [tp] dim 1 : !stage.tensor<[B, S/tp], bf16> -> !stage.tensor<[B, S/tp], bf16>
  return
}

// -----

stage.grid @grid [dp, tp]
func.func @f(%x: !stage.tensor<[B, S], bf16>) {
  // expected-error @+1 {{result dimension 1 is S; expected S/(dp*tp)}}
  %0 = stage.reduce_scatter %x on @grid [dp, tp] dim 1 : !stage.tensor<[B, S], bf16> -> !stage.tensor<[B, S], bf16>
  return
}

// -----

stage.grid @grid [dp, tp]
func.func @f(%x: !stage.tensor<[B, S], bf16>) {
  // expected-error @+1 {{operand and result differ in dimension 0}}
  %0 = stage.reduce_scatter %x on @grid [tp] dim 1 : !stage.tensor<[B, S], bf16> -> !stage.tensor<[S, S/tp], bf16>
  return
}

// -----

stage.grid @grid [ep]
func.func @f(%x: !stage.tensor<[E, C], bf16>) {
  // expected-error @+1 {{result dimension 0 is E; expected E/ep}}
  %0 = stage.all_to_all %x on @grid [ep] split 0 concat 1 : !stage.tensor<[E, C], bf16> -> !stage.tensor<[E, C*ep], bf16>
  return
}

// -----

stage.grid @grid [pp, tp]
func.func @f(%x: !stage.tensor<[B], bf16>) {
  // expected-error @+1 {{communicates along exactly one axis}}
  stage.send %x on @grid [pp, tp] shift 1 channel 0 : !stage.tensor<[B], bf16>
  return
}

// -----

stage.grid @grid [pp]
func.func @f() {
  // expected-error @+1 {{shift 0 would send to itself}}
  %0 = stage.recv on @grid [pp] shift 0 channel 0 : !stage.tensor<[B], bf16>
  return
}

// -----

func.func @f(%x: !stage.tensor<[B, S], bf16>, %w: !stage.tensor<[K], bf16>) {
  // expected-error @+1 {{input must be [batch, seq, channels...], got [B, S]}}
  %0 = stage.conv1d %x, %w : (!stage.tensor<[B, S], bf16>, !stage.tensor<[K], bf16>) -> !stage.tensor<[B, S], bf16>
  return
}

// -----

func.func @f(%x: !stage.tensor<[B, S, Di], bf16>, %w: !stage.tensor<[Dj, K], bf16>) {
  // expected-error @+1 {{weight [Dj, K] must be the input's channels and the taps, [Di, K]}}
  %0 = stage.conv1d %x, %w : (!stage.tensor<[B, S, Di], bf16>, !stage.tensor<[Dj, K], bf16>) -> !stage.tensor<[B, S, Di], bf16>
  return
}

// -----

func.func @f(%x: !stage.tensor<[B, S, Di], bf16>, %a: !stage.tensor<[Di, N], bf16>, %b: !stage.tensor<[B, S, N], bf16>, %d: !stage.tensor<[Di], bf16>) {
  // expected-error @+1 {{selective form takes no chunk size}}
  %0 = stage.ssm_scan %x, %x, %a, %b, %b, %d chunk <Q> : (!stage.tensor<[B, S, Di], bf16>, !stage.tensor<[B, S, Di], bf16>, !stage.tensor<[Di, N], bf16>, !stage.tensor<[B, S, N], bf16>, !stage.tensor<[B, S, N], bf16>, !stage.tensor<[Di], bf16>) -> !stage.tensor<[B, S, Di], bf16>
  return
}

// -----

func.func @f(%x: !stage.tensor<[B, S, Di], bf16>, %a: !stage.tensor<[Di], bf16>, %b: !stage.tensor<[B, S, N], bf16>) {
  // expected-error @+1 {{A must be [Di, N], got [Di]}}
  %0 = stage.ssm_scan %x, %x, %a, %b, %b, %a : (!stage.tensor<[B, S, Di], bf16>, !stage.tensor<[B, S, Di], bf16>, !stage.tensor<[Di], bf16>, !stage.tensor<[B, S, N], bf16>, !stage.tensor<[B, S, N], bf16>, !stage.tensor<[Di], bf16>) -> !stage.tensor<[B, S, Di], bf16>
  return
}

// -----

func.func @f(%x: !stage.tensor<[B, S, H, P], bf16>, %dt: !stage.tensor<[B, S, H], bf16>, %a: !stage.tensor<[H], bf16>, %b: !stage.tensor<[B, S, G, N], bf16>) {
  // expected-error @+1 {{with heads needs a chunk size}}
  %0 = stage.ssm_scan %x, %dt, %a, %b, %b, %a : (!stage.tensor<[B, S, H, P], bf16>, !stage.tensor<[B, S, H], bf16>, !stage.tensor<[H], bf16>, !stage.tensor<[B, S, G, N], bf16>, !stage.tensor<[B, S, G, N], bf16>, !stage.tensor<[H], bf16>) -> !stage.tensor<[B, S, H, P], bf16>
  return
}

// -----

func.func @f(%x: !stage.tensor<[B, S, H, P], bf16>, %dt: !stage.tensor<[B, S, H], bf16>, %a: !stage.tensor<[H], bf16>, %b: !stage.tensor<[B, S, G, N], bf16>, %c: !stage.tensor<[B, S, G, M], bf16>) {
  // expected-error @+1 {{C must be [B, S, G, N], got [B, S, G, M]}}
  %0 = stage.ssm_scan %x, %dt, %a, %b, %c, %a chunk <Q> : (!stage.tensor<[B, S, H, P], bf16>, !stage.tensor<[B, S, H], bf16>, !stage.tensor<[H], bf16>, !stage.tensor<[B, S, G, N], bf16>, !stage.tensor<[B, S, G, M], bf16>, !stage.tensor<[H], bf16>) -> !stage.tensor<[B, S, H, P], bf16>
  return
}

// -----

func.func @f(%x: !stage.tensor<[B, S, Di], bf16>, %a: !stage.tensor<[Di, N], bf16>, %b: !stage.tensor<[B, S, N], bf16>, %d: !stage.tensor<[Di], bf16>) {
  // expected-error @+1 {{result must have the input's shape}}
  %0 = stage.ssm_scan %x, %x, %a, %b, %b, %d : (!stage.tensor<[B, S, Di], bf16>, !stage.tensor<[B, S, Di], bf16>, !stage.tensor<[Di, N], bf16>, !stage.tensor<[B, S, N], bf16>, !stage.tensor<[B, S, N], bf16>, !stage.tensor<[Di], bf16>) -> !stage.tensor<[B, S, N], bf16>
  return
}

// -----

func.func @f(%x: !stage.tensor<[B, S, Di], bf16>, %a: !stage.tensor<[Di, N], bf16>, %b: !stage.tensor<[B, S, N], bf16>, %d: !stage.tensor<[Di], bf16>) {
  // expected-error @+1 {{each gradient must have its input's shape}}
  %0:6 = stage.ssm_scan_grad %x, %x, %a, %b, %b, %d, %x : (!stage.tensor<[B, S, Di], bf16>, !stage.tensor<[B, S, Di], bf16>, !stage.tensor<[Di, N], bf16>, !stage.tensor<[B, S, N], bf16>, !stage.tensor<[B, S, N], bf16>, !stage.tensor<[Di], bf16>, !stage.tensor<[B, S, Di], bf16>) -> (!stage.tensor<[B, S, Di], bf16>, !stage.tensor<[B, S, Di], bf16>, !stage.tensor<[Di, N], bf16>, !stage.tensor<[B, S, N], bf16>, !stage.tensor<[B, S, Di], bf16>, !stage.tensor<[Di], bf16>)
  return
}

// -----

func.func @f(%x: !stage.tensor<[B, S, Di], bf16>, %a: !stage.tensor<[Di, N], bf16>, %b: !stage.tensor<[B, S, N], bf16>, %d: !stage.tensor<[Di], bf16>) {
  // expected-error @+1 {{delta rule needs heads and a chunk size (the chunked form's shapes)}}
  %0 = stage.ssm_scan %x, %x, %a, %b, %b, %d delta : (!stage.tensor<[B, S, Di], bf16>, !stage.tensor<[B, S, Di], bf16>, !stage.tensor<[Di, N], bf16>, !stage.tensor<[B, S, N], bf16>, !stage.tensor<[B, S, N], bf16>, !stage.tensor<[Di], bf16>) -> !stage.tensor<[B, S, Di], bf16>
  return
}

// -----

func.func @f(%x: !stage.tensor<[B, S, H, P], bf16>, %dt: !stage.tensor<[B, S, H], bf16>, %a: !stage.tensor<[H], bf16>, %b: !stage.tensor<[B, S, G, N], bf16>) {
  // expected-error @+1 {{beta must be [B, S, H], got [H]}}
  %0 = stage.ssm_scan %x, %dt, %a, %b, %b, %a chunk <Q> delta : (!stage.tensor<[B, S, H, P], bf16>, !stage.tensor<[B, S, H], bf16>, !stage.tensor<[H], bf16>, !stage.tensor<[B, S, G, N], bf16>, !stage.tensor<[B, S, G, N], bf16>, !stage.tensor<[H], bf16>) -> !stage.tensor<[B, S, H, P], bf16>
  return
}

// -----

func.func @f(%x: !stage.tensor<[B, S, Di], bf16>, %a: !stage.tensor<[Di, N], bf16>, %b: !stage.tensor<[B, S, N], bf16>, %d: !stage.tensor<[Dj], bf16>) {
  // expected-error @+1 {{D must be [Di], got [Dj]}}
  %0 = stage.ssm_scan %x, %x, %a, %b, %b, %d : (!stage.tensor<[B, S, Di], bf16>, !stage.tensor<[B, S, Di], bf16>, !stage.tensor<[Di, N], bf16>, !stage.tensor<[B, S, N], bf16>, !stage.tensor<[B, S, N], bf16>, !stage.tensor<[Dj], bf16>) -> !stage.tensor<[B, S, Di], bf16>
  return
}

// -----

func.func @f(%x: !stage.tensor<[B, S, Di], bf16>, %w: !stage.tensor<[Di, K], bf16>) {
  // expected-error @+1 {{each gradient must have its input's shape}}
  %0:2 = stage.conv1d_grad %x, %w, %x : (!stage.tensor<[B, S, Di], bf16>, !stage.tensor<[Di, K], bf16>, !stage.tensor<[B, S, Di], bf16>) -> (!stage.tensor<[B, S, Di], bf16>, !stage.tensor<[B, S, Di], bf16>)
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{the zb-v schedule runs 2 virtual stages per rank, not 1}}
  stage.pipeline schedule "zb-v" virtual_stages 1 {
    stage.pipeline_stage 0 layers [0, 1] {
      stage.yield
    }
  }
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{the dualpipe schedule needs an even number of ranks, not 1}}
  stage.pipeline schedule dualpipe virtual_stages 2 {
    stage.pipeline_stage 0 layers [0, 1] {
      stage.yield
    }
    stage.pipeline_stage 1 layers [0, 1] {
      stage.yield
    }
  }
  return
}

// -----

func.func @f() {
  stage.pipeline schedule "1f1b" virtual_stages 1 {
    // expected-error @+1 {{layers must be a range [begin, end] with 0 <= begin <= end}}
    stage.pipeline_stage 0 layers [-4, 4] {
      stage.yield
    }
  }
  return
}

// -----

// The stages hold consecutive layers from 0: a stage placed past the
// layers of the one before it (or anywhere else) is refused.
func.func @f() {
  stage.pipeline schedule "1f1b" virtual_stages 1 {
    stage.pipeline_stage 0 layers [0, 16] {
      stage.yield
    }
    // expected-error @+1 {{layers [20, 40] must start at layer 16, where the stage before it ends}}
    stage.pipeline_stage 1 layers [20, 40] {
      stage.yield
    }
  }
  return
}

// -----

// Stages past the model's layers: the pipeline holds 32, its stages 40.
func.func @f() {
  // expected-error @+1 {{has 32 layers but its stages hold layers up to 40 (the stages hold the layers [0, 32) in order)}}
  stage.pipeline schedule "1f1b" virtual_stages 1 layers 32 {
    stage.pipeline_stage 0 layers [0, 17] {
      stage.yield
    }
    stage.pipeline_stage 1 layers [17, 40] {
      stage.yield
    }
  }
  return
}

// -----

func.func @f() {
  stage.pipeline schedule "1f1b" virtual_stages 1 {
    // expected-error @+1 {{layers [4, 8] must start at layer 0}}
    stage.pipeline_stage 0 layers [4, 8] {
      stage.yield
    }
  }
  return
}

// -----

// DualPipe's stages pp + j are copies of the stages j.
func.func @f() {
  stage.pipeline schedule dualpipe virtual_stages 2 {
    stage.pipeline_stage 0 layers [0, 1] {
      stage.yield
    }
    stage.pipeline_stage 1 layers [1, 2] {
      stage.yield
    }
    stage.pipeline_stage 2 layers [0, 1] {
      stage.yield
    }
    // expected-error @+1 {{is the mirrored copy of stage 1 and must hold its layers}}
    stage.pipeline_stage 3 layers [1, 3] {
      stage.yield
    }
  }
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{only the interleaved schedule has virtual stages}}
  stage.pipeline schedule "zb-h1" virtual_stages 2 {
    stage.pipeline_stage 0 layers [0, 1] {
      stage.yield
    }
    stage.pipeline_stage 1 layers [1, 2] {
      stage.yield
    }
  }
  return
}
