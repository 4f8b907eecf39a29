"""The plan matrix: combinations of every plan option (docs/Testing.md), on
a tiny dense Llama, a tiny Mistral (sliding-window attention), a tiny
Mixtral, a tiny DeepSeek-V3 (MLA, a dense first layer, a shared expert), a
tiny gpt-oss (attention sinks, alternating sliding and full layers, biases
on attention, router and experts, 24 experts: tokens per expert are not
whole), a tiny Nemotron-H-style hybrid (Mamba-2 mixers split over tp by heads and
groups as Megatron's Mamba layers are, attention and ReLU^2 MLP layers, one
block each) and a tiny Zamba2 (Mamba-2 layers and two transformer blocks
shared across depth: a copy on every pipeline chunk that uses one, their
gradients summed over the holders, the embeddings sent to every chunk with
a use), each checked against closed forms
written here from the models' configs and the literature, not from the
project's analyses:

- the trace set verifies, and `stage-trace stats` agrees with the report on
  every rank's FLOPs, collective bytes by kind, and sent and received bytes;
- conservation of model states: every stage's weights, gradients, fp32
  master weights and Adam moments per rank are the parameters of its layers
  split as Megatron-LM splits them (tp over heads, ffn and vocabulary, all
  kv heads on every rank when tp exceeds them; experts 1/ep) and as ZeRO
  stage Z
  partitions them over the data-parallel ranks (dp, cp and ep for dense
  weights, dp and cp for experts) (Rajbhandari et al. 2020);
- conservation of work: the matrix-unit FLOPs summed over all ranks are the
  unsharded step's (2 x tokens x weights touched forward, twice that
  backward, the attention's score matrix, W keys per query under a sliding
  window, the policy's recomputation), plus
  exactly the redundancy of tp without SP; each phase's FLOPs summed over
  ranks do not depend on dp, cp, ep, pp or ZeRO beyond the gradient
  accumulation and optimizer work on the state each rank holds;
- traffic: the data-parallel collectives of each ZeRO stage, the pipeline's
  sends, the expert all-to-alls, the context-parallel gathers and the
  tensor-parallel collectives of Megatron-LM, per stage and rank, in bytes.

    plan_matrix.py BIN_DIR CONFIG_DIR WORK_DIR [--jobs N] [--models a,b]
"""
import argparse
import concurrent.futures
import hashlib
import itertools
import json
import os
import re
import shutil
import subprocess
import sys

BATCH, SEQ = 16, 64
BF16, FP32 = 2, 4

# ---------------------------------------------------------------------------
# The models, from their configs
# ---------------------------------------------------------------------------


class Param:
    """One weight tensor: its element count, the divisor tensor parallelism
    applies to it, and whether it is an expert weight (split by ep)."""

    def __init__(self, count, tp_div, expert=False, read_backward=True,
                 output_bias=False, per_head=lambda tp: False):
        self.count, self.tp_div, self.expert = count, tp_div, expert
        # Whether the backward reads the weight (FSDP gathers it again).
        self.read_backward = read_backward
        # A bias on the output of a row-parallel contraction (tp does not
        # split it): its gradient sums the output's gradient over the
        # tokens (see expected_model_traffic).
        self.output_bias = output_bias
        # Whether a weight tp does not split is applied to every head of
        # heads tp splits (a per-head norm's; k's only while tp does not
        # exceed the kv heads): its gradient sums over them.
        self.per_head = per_head
        self.in_layer = True  # a transformer layer's, not embedding or head
        self.shared = False  # a block's that several layers use (Zamba2)


def outside_layers(params):
    for p in params:
        p.in_layer = False
    return params


class Model:
    def __init__(self, name, config):
        self.name, c = name, config
        self.arch = c["architectures"][0]
        self.D = c["hidden_size"]
        self.H = c["num_attention_heads"]
        self.KV = c.get("num_key_value_heads", self.H)
        self.L = c["num_hidden_layers"]
        self.V = c["vocab_size"]
        self.F = c["intermediate_size"]
        self.gptoss = "GptOss" in self.arch
        # Qwen3-Next made dense (every layer in mlp_only_layers): Gated
        # DeltaNet layers ('N') and every full_attention_interval-th a gated
        # attention layer ('G'), each with an MLP.
        self.qnext = "Qwen3Next" in self.arch
        # Command-R: attention and the MLP read one norm of the layer's
        # input in parallel, and their outputs join the residual together.
        self.parallel = "Cohere" in self.arch
        self.moe = ("Mixtral" in self.arch or "Deepseek" in self.arch
                    or self.gptoss)
        self.mla = "Deepseek" in self.arch
        # Layer kinds: 'A' attention and an MLP; a Nemotron-H pattern's 'M'
        # (a Mamba-2 mixer), '*' (attention) and '-' (a ReLU^2 MLP).
        self.kinds = list(c.get("hybrid_override_pattern", "A" * self.L))
        # Zamba2: Mamba-2 layers; a 'Z' layer's mixer also reads a shared
        # block's output (use j runs block j % num_mem_blocks) on the layer's
        # input joined with the embeddings: attention from 2D channels (H
        # heads of 2D / H), a gated MLP of F, the use's own D x D linear,
        # adapters of rank Ra on the MLP's gate and up (and on q, k, v).
        self.zamba = "Zamba2" in self.arch
        if self.zamba:
            t = c["layers_block_type"]
            self.kinds = ["Z" if k == "hybrid" else "M" for k in t]
            self.uses = [i for i, k in enumerate(t) if k == "hybrid"]
            self.blocks = c.get("num_mem_blocks", 1)
            self.Ra = c["adapter_rank"]
            self.attn_adapters = c.get("use_shared_attention_adapter", False)
        if self.qnext:
            every = c["full_attention_interval"]
            self.kinds = ["G" if (i + 1) % every == 0 else "N"
                          for i in range(self.L)]
            self.Hm, self.P = (c["linear_num_value_heads"],
                               c["linear_value_head_dim"])
            self.G, self.Ns = c["linear_num_key_heads"], c["linear_key_head_dim"]
            self.Kc, self.Q = c["linear_conv_kernel_dim"], 64
        self.ssm = "M" in self.kinds
        if self.zamba:
            self.Hm = c["n_mamba_heads"]
            self.P = c["mamba_expand"] * self.D // self.Hm
            self.G, self.Ns = c["mamba_ngroups"], c["mamba_d_state"]
            self.Kc, self.Q = c.get("mamba_d_conv", 4), c["chunk_size"]
        elif self.ssm:
            self.Hm, self.P = c["mamba_num_heads"], c["mamba_head_dim"]
            self.G, self.Ns = c["n_groups"], c["ssm_state_size"]
            self.Kc, self.Q = c.get("conv_kernel", 4), c["chunk_size"]
        if "Mixtral" in self.arch or self.gptoss:
            self.E, self.K = c["num_local_experts"], c["num_experts_per_tok"]
            self.Fe, self.Fs, self.dense_layers = self.F, 0, 0
        elif self.mla:
            self.E, self.K = c["n_routed_experts"], c["num_experts_per_tok"]
            self.Fe = c["moe_intermediate_size"]
            self.Fs = c["n_shared_experts"] * self.Fe
            self.dense_layers = c["first_k_dense_replace"]
            self.Qr, self.Kr = c["q_lora_rank"], c["kv_lora_rank"]
            self.Dn, self.Dr = c["qk_nope_head_dim"], c["qk_rope_head_dim"]
            self.Dv = c["v_head_dim"]
            self.Dqk = self.Dn + self.Dr
        if self.zamba:
            self.Dh = self.Dqk = self.Dv = 2 * self.D // self.H
        elif not self.mla:
            self.Dh = c.get("head_dim", self.D // self.H)
            self.Dqk = self.Dv = self.Dh
        # Sliding-window attention: each query scores the W keys before it
        # (Mistral's sliding_window), all S when the window is as long; in
        # the layers layer_types names sliding when it names them.
        window = min(c.get("sliding_window") or SEQ, SEQ)
        types = c.get("layer_types", ["sliding_attention"] * self.L)
        self.keys = [window if t == "sliding_attention" else SEQ
                     for t in types]
        # Layers of different kinds alternate in a period that pipeline
        # stages keep whole: the units a pipeline splits.
        kinds = list(zip(types, self.kinds)) if self.qnext else types
        period = next(p for p in range(1, self.L + 1) if self.L % p == 0
                      and all(k == kinds[i % p] for i, k in enumerate(kinds)))
        self.units = self.L // period

    def is_moe_layer(self, i):
        return self.moe and i >= self.dense_layers

    def has_attention(self, i):
        return self.kinds[i] in "A*GZ"

    def adapters(self):
        """Low-rank adapters per use: the MLP's, and q's, k's and v's."""
        return 1 + (3 if self.attn_adapters else 0)

    def adapter_downs(self):
        """Weights per token of a use's adapters' down projections."""
        return self.D * self.Ra + (6 * self.D * self.Ra
                                   if self.attn_adapters else 0)

    def block_of(self, i):
        """The shared block layer i uses (Zamba2)."""
        return self.uses.index(i) % self.blocks

    def delta_per_token(self, i):
        """Matrix FLOPs per token of layer i's chunked delta rule, forward
        (Yang et al. 2024), per value head: K K^T, W and Q K^T within the
        chunk (2 Q N each), U and the masked product with the values (2 Q
        P each), W S, Q S and the state update (2 N P each)."""
        if self.kinds[i] != "N":
            return 0
        Q, N, P = self.Q, self.Ns, self.P
        return self.Hm * (6 * Q * N + 4 * Q * P + 6 * N * P)

    def ssd_per_token(self, i):
        """Matrix FLOPs per token of layer i's chunked scan, forward (Dao
        and Gu 2024: C B^T within a chunk, its product with x, the chunk
        states and their read-out)."""
        if self.kinds[i] not in "MZ":
            return 0
        Q, Ns, G, P, Hm = self.Q, self.Ns, self.G, self.P, self.Hm
        return 2 * Q * Ns * G + 2 * Q * P * Hm + 4 * Ns * P * Hm

    def kv_div(self, tp):
        # More tp ranks than kv heads: every rank keeps all kv heads.
        return tp if tp <= self.KV else 1

    def hybrid_layer_params(self, i):
        """One block and its norm: a Mamba-2 mixer (every weight split over
        tp by heads or groups, as Megatron's Mamba layers split them),
        attention, or an MLP."""
        D, tp_h, one = self.D, lambda tp: tp, lambda tp: 1
        ps = [Param(D, one)]
        kind = self.kinds[i]
        if kind == "Z":
            ps += self.use_params()
        if kind in "MZ":
            Hm, P, G, Ns, Kc = self.Hm, self.P, self.G, self.Ns, self.Kc
            ps += [Param(D * Hm * P, tp_h), Param(D * Hm * P, tp_h),
                   Param(D * G * Ns, tp_h), Param(D * G * Ns, tp_h),
                   Param(D * Hm, tp_h),  # in_proj: z, x, B, C, dt
                   Param(Hm * P * Kc, tp_h), Param(G * Ns * Kc, tp_h),
                   Param(G * Ns * Kc, tp_h),  # the convolutions
                   Param(Hm, tp_h), Param(Hm, tp_h),  # A_log, D
                   Param(Hm * P, tp_h),  # the gated norm
                   Param(Hm * P * D, tp_h)]  # out_proj
            # Biases are added: their gradients do not read them.
            ps += [Param(n, tp_h, read_backward=False)
                   for n in (Hm * P, G * Ns, G * Ns, Hm)]
        elif kind == "*":
            Dh, KV, H = self.Dh, self.KV, self.H
            ps += [Param(D * H * Dh, tp_h), Param(D * KV * Dh, self.kv_div),
                   Param(D * KV * Dh, self.kv_div), Param(H * Dh * D, tp_h)]
        else:
            ps += [Param(D * self.F, tp_h), Param(self.F * D, tp_h)]
        return ps

    def use_params(self):
        """A use of a shared block's own weights: its linear (replicated),
        the adapters' down projections (replicated; their gradients sum the
        heads and ffn channels of every rank) and up projections (split
        with the projection they add to)."""
        D, F, Ra, H, KV, Dh = self.D, self.F, self.Ra, self.H, self.KV, self.Dh
        tp_h, one, every = lambda tp: tp, lambda tp: 1, lambda tp: True
        ps = [Param(D * D, one), Param(D * Ra, one, per_head=every),
              Param(Ra * F, tp_h), Param(Ra * F, tp_h)]
        if self.attn_adapters:
            ps += [Param(2 * D * Ra, one, per_head=every) for _ in range(3)]
            ps += [Param(Ra * H * Dh, tp_h), Param(Ra * KV * Dh, self.kv_div),
                   Param(Ra * KV * Dh, self.kv_div)]
        return ps

    def shared_block_params(self):
        """One shared block: its norms, attention from 2D channels, the
        gated MLP."""
        D, F, H, KV, Dh = self.D, self.F, self.H, self.KV, self.Dh
        tp_h, one = lambda tp: tp, lambda tp: 1
        ps = [Param(2 * D, one), Param(2 * D * H * Dh, tp_h),
              Param(2 * D * KV * Dh, self.kv_div),
              Param(2 * D * KV * Dh, self.kv_div), Param(H * Dh * D, tp_h),
              Param(D, one), Param(D * F, tp_h), Param(D * F, tp_h),
              Param(F * D, tp_h)]
        for p in ps:
            p.shared = True
        return ps

    def qnext_layer_params(self, i):
        """Two norms, the mixer and the MLP. Gated DeltaNet's weights split
        over tp by value heads or key heads (the gated norm's weight of P,
        shared by the heads, is whole); gated attention's q, its gate and o
        by heads, k and v by kv heads, its q and k norms (Dh) whole."""
        D, tp_h, one = self.D, lambda tp: tp, lambda tp: 1
        ps = [Param(D, one), Param(D, one)]
        if self.kinds[i] == "N":
            Hm, P, G, N, Kc = self.Hm, self.P, self.G, self.Ns, self.Kc
            ps += [Param(D * G * N, tp_h), Param(D * G * N, tp_h),
                   Param(D * Hm * P, tp_h), Param(D * Hm * P, tp_h),
                   Param(D * Hm, tp_h), Param(D * Hm, tp_h),  # in_proj
                   Param(G * N * Kc, tp_h), Param(G * N * Kc, tp_h),
                   Param(Hm * P * Kc, tp_h),  # the convolutions
                   Param(Hm, tp_h, read_backward=False),  # dt_bias, added
                   Param(Hm, tp_h), Param(P, one, per_head=lambda tp: True),  # A_log, norm
                   Param(Hm * P * D, tp_h)]  # out_proj
        else:
            H, KV, Dh = self.H, self.KV, self.Dh
            ps += [Param(2 * D * H * Dh, tp_h),  # q and its gate
                   Param(D * KV * Dh, self.kv_div),
                   Param(D * KV * Dh, self.kv_div), Param(H * Dh * D, tp_h),
                   Param(Dh, one, per_head=lambda tp: True),
                   Param(Dh, one, per_head=lambda tp: tp <= KV)]
        ps += [Param(D * self.F, tp_h) for _ in range(3)]
        return ps

    def layer_params(self, i):
        if self.ssm:
            return self.hybrid_layer_params(i)
        if self.qnext:
            return self.qnext_layer_params(i)
        D, H, tp_h = self.D, self.H, lambda tp: tp
        one = lambda tp: 1
        # The two norms; a parallel layer's one.
        ps = [Param(D, one)] * (1 if self.parallel else 2)
        if self.mla:
            Qr, Kr, Dn, Dr, Dv = self.Qr, self.Kr, self.Dn, self.Dr, self.Dv
            ps += [Param(D * Qr, one), Param(Qr, one),
                   Param(Qr * H * (Dn + Dr), tp_h),
                   Param(D * (Dr + Kr), one), Param(Kr, one),
                   Param(Kr * H * (Dv + Dn), tp_h), Param(H * Dv * D, tp_h)]
        else:
            Dh, KV = self.Dh, self.KV
            ps += [Param(D * H * Dh, tp_h), Param(D * KV * Dh, self.kv_div),
                   Param(D * KV * Dh, self.kv_div), Param(H * Dh * D, tp_h)]
        if self.gptoss:
            # Biases of q, k, v and o, and one sink logit per head: none is
            # read by its gradient (a bias's is the output's gradient
            # summed; a sink's reads the rescaling it made, saved forward).
            ps += [Param(H * Dh, tp_h, read_backward=False),
                   Param(KV * Dh, self.kv_div, read_backward=False),
                   Param(KV * Dh, self.kv_div, read_backward=False),
                   Param(D, one, read_backward=False, output_bias=True),
                   Param(H, tp_h, read_backward=False)]
        if self.is_moe_layer(i):
            E, Fe, Fs = self.E, self.Fe, self.Fs
            ps += [Param(D * E, one)]  # the router, replicated
            if self.gptoss:
                # The router's bias, replicated; each expert's gate, up
                # (split by tp with their columns) and down biases.
                ps += [Param(E, one, read_backward=False),
                       Param(E * Fe, tp_h, expert=True, read_backward=False),
                       Param(E * Fe, tp_h, expert=True, read_backward=False),
                       Param(E * D, one, expert=True, read_backward=False,
                             output_bias=True)]
            if self.mla:
                # e_score_correction_bias: it only steers the top-k choice.
                ps += [Param(E, one, read_backward=False)]
            ps += [Param(E * D * Fe, tp_h, expert=True) for _ in range(3)]
            ps += [Param(D * Fs, tp_h) for _ in range(3 if Fs else 0)]
        else:
            ps += [Param(D * self.F, tp_h) for _ in range(3)]
        return ps

    def embedding_params(self):
        # The embedding's gradient is a scatter-add that does not read it.
        return outside_layers(
            [Param(self.V * self.D, lambda tp: tp, read_backward=False)])

    def head_params(self):
        return outside_layers([Param(self.D, lambda tp: 1),  # the final norm
                               Param(self.D * self.V, lambda tp: tp)])

    def matmul_weights_per_token(self, i):
        """Weight elements a token multiplies by in layer i (forward)."""
        D, H = self.D, self.H
        if self.ssm and self.kinds[i] in "MZ":
            Hm, P, G, Ns = self.Hm, self.P, self.G, self.Ns
            n = D * (2 * Hm * P + 2 * G * Ns + Hm) + Hm * P * D
            if self.kinds[i] == "M":
                return n
            F, Ra, KV, Dh = self.F, self.Ra, self.KV, self.Dh
            n += 2 * D * H * Dh + 2 * 2 * D * KV * Dh + H * Dh * D
            if self.attn_adapters:
                n += 3 * 2 * D * Ra + Ra * H * Dh + 2 * Ra * KV * Dh
            return n + 3 * D * F + D * Ra + 2 * Ra * F + D * D
        if self.ssm and self.kinds[i] == "-":
            return 2 * D * self.F
        if self.qnext and self.kinds[i] == "N":
            Hm, P, G, N = self.Hm, self.P, self.G, self.Ns
            return (D * (2 * G * N + 2 * Hm * P + 2 * Hm) + Hm * P * D
                    + 3 * D * self.F)
        if self.qnext:  # gated attention: q and its gate, k, v, o; the MLP
            Dh = self.Dh
            return (2 * D * H * Dh + 2 * D * self.KV * Dh + H * Dh * D
                    + 3 * D * self.F)
        if self.mla:
            n = (D * self.Qr + self.Qr * H * (self.Dn + self.Dr)
                 + D * (self.Dr + self.Kr) + self.Kr * H * (self.Dv + self.Dn)
                 + H * self.Dv * D)
        else:
            n = D * H * self.Dh + 2 * D * self.KV * self.Dh + H * self.Dh * D
        if self.ssm:  # a hybrid's attention layer has no MLP
            return n
        if self.is_moe_layer(i):
            n += D * self.E + self.K * 3 * D * self.Fe + 3 * D * self.Fs
        else:
            n += 3 * D * self.F
        return n

    def replicated_matmul_weights_per_token(self, i, tp):
        """Weight elements of layer i's matmuls that tp does not split."""
        D, n = self.D, 0
        if self.zamba:
            if self.kinds[i] != "Z":
                return 0
            return D * D + D * self.Ra + (6 * D * self.Ra
                                          if self.attn_adapters else 0)
        if not self.has_attention(i):
            return 0
        if self.mla:
            n += D * self.Qr + D * (self.Dr + self.Kr)
        elif tp > self.KV:
            n += 2 * D * self.KV * self.Dh
        if self.is_moe_layer(i):
            n += D * self.E
        return n


# ---------------------------------------------------------------------------
# The plans
# ---------------------------------------------------------------------------


class Plan:
    def __init__(self, model, dp, tp, pp, cp, ep, zero, recompute, schedule,
                 sp, M):
        self.model = model
        self.dp, self.tp, self.pp, self.cp, self.ep = dp, tp, pp, cp, ep
        self.zero, self.recompute, self.schedule = zero, recompute, schedule
        self.sp, self.M = sp, M
        self.v = 2 if schedule in ("interleaved", "zb-v", "dualpipe-v",
                                   "dualpipe") else 1
        # ZB-V's and DualPipeV's stages run in a V: rank 0 holds the first
        # and the last.
        self.vshape = schedule in ("zb-v", "dualpipe-v")
        # DualPipe: rank r holds stage r and a copy of stage pp - 1 - r, so
        # the first and the last rank hold the embedding and the head; each
        # copy runs half the micro-batches, and the two copies of a gradient
        # are exchanged before the update (DeepSeek-V3).
        self.mirrored = schedule == "dualpipe"
        self.runs = M // 2 if self.mirrored else M  # micro-batches per chunk

    def holds_embedding(self, stage):
        return stage == 0 or (self.mirrored and stage == self.pp - 1)

    def holds_head(self, stage):
        return (stage == (0 if self.vshape else self.pp - 1)
                or (self.mirrored and stage == 0))

    def options(self):
        return (f"dp={self.dp} tp={self.tp} pp={self.pp} cp={self.cp} "
                f"ep={self.ep} zero={self.zero} recompute={self.recompute} "
                f"schedule={self.schedule} sp={int(self.sp)} "
                f"micro-batches={self.M}")

    def ranks_per_stage(self):
        return self.dp * self.tp * self.cp * self.ep

    def data_ranks(self, expert):
        """The ranks over which a weight's gradient is a partial sum."""
        return self.dp * self.cp * (1 if expert else self.ep)


def enumerate_plans(model):
    """Every degree tuple of {1, 2} (ep only for MoE models), the wider
    degrees where they matter (tp=4 replicates kv heads, pp=4 interleaves
    eight one-layer chunks, ep=4 and 8 hold fewer experts), each with every
    ZeRO stage its data parallelism allows; recomputation, schedule,
    sequence parallelism and micro-batches rotate over the tuples so that
    every pair of options meets."""
    eps = [1, 2] if model.moe else [1]
    tuples = [t + (ep,) for t in itertools.product([1, 2], repeat=4)
              for ep in eps]  # (dp, tp, pp, cp, ep)
    scans = model.ssm or model.qnext
    if scans:  # context parallelism refuses state-space scans
        tuples = [t for t in tuples if t[3] == 1]
    tuples += [(1, 4, 1, 1, 1), (2, 4, 2, 1, 1)]
    if not scans:
        tuples += [(1, 4, 2, 2, 1)]
    if model.units >= 8:
        tuples += [(1, 1, 4, 1, 1), (2, 2, 4, 1, 1)]
        if not scans:
            tuples += [(1, 2, 4, 2, 1)]
    if model.moe:
        tuples += [(1, 1, 1, 1, 4), (1, 2, 2, 1, 4), (2, 1, 2, 1, 4),
                   (1, 1, 1, 1, 8), (1, 2, 1, 1, 8)]
    options = list(itertools.product(["none", "selective", "full"],
                                     ["1f1b", "gpipe", "interleaved", "zb-h1",
                                      "zb-v", "dualpipe-v"],
                                     [True, False], [4, 1]))
    plans = []
    for n, (dp, tp, pp, cp, ep) in enumerate(tuples):
        zeros = [0, 1, 2, 3] if dp * cp * ep > 1 else [0]
        for zero in zeros:
            recompute, schedule, sp, M = options[(7 * n + 5 * zero) % len(options)]
            if pp == 1:
                schedule = "1f1b"
            if schedule == "interleaved" and (M % pp or model.units < 2 * pp):
                schedule = "1f1b"
            M = max(1, min(M, BATCH // (dp * ep)))
            # Every other DualPipeV plan runs DualPipe (even pp and M).
            if schedule == "dualpipe-v" and n % 2 == 0 and pp % 2 == 0 \
                    and M % 2 == 0 and M >= 2 * pp:
                schedule = "dualpipe"
            if schedule == "dualpipe-v" and M < 2 * pp:
                schedule = "zb-v"
            if schedule in ("zb-v", "dualpipe-v") and model.units < 2 * pp:
                schedule = "zb-h1"
            plans.append(Plan(model, dp, tp, pp, cp, ep, zero, recompute,
                              schedule, sp, M))
    return plans


# ---------------------------------------------------------------------------
# Running a plan
# ---------------------------------------------------------------------------


def run(cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)


def crashed(proc):
    text = proc.stderr
    return (proc.returncode < 0 or proc.returncode > 1 or "Stack dump" in text
            or "LLVM ERROR" in text or "Assertion" in text
            or "internal error" in text)


class Outcome:
    def __init__(self, plan):
        self.plan, self.rejected, self.failures = plan, None, []
        self.report = self.stats = self.digest = None

    def fail(self, what):
        self.failures.append(what)


def digest_dir(directory, extra):
    """One hash of the files of `directory` and `extra`: what a refactoring
    must leave byte-identical (--digests)."""
    h = hashlib.sha256()
    names = sorted(os.listdir(directory))
    for path in [os.path.join(directory, n) for n in names] + extra:
        h.update(os.path.basename(path).encode())
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def run_plan(bindir, model_mlir, plan, work, with_traces=True):
    out = Outcome(plan)
    tag = re.sub(r"[^a-z0-9]+", "_", plan.model.name + " " + plan.options())
    d = os.path.join(work, tag)
    os.makedirs(d, exist_ok=True)
    step = os.path.join(d, "step.mlir")
    p = run([os.path.join(bindir, "stage-opt"), model_mlir, "-o", step,
             "--stage-train=" + plan.options()])
    if p.returncode != 0:
        if crashed(p) or "error:" not in p.stderr:
            out.fail("stage-opt crashed: " + p.stderr[-2000:])
        else:
            out.rejected = p.stderr.strip().splitlines()[0]
        shutil.rmtree(d)
        return out
    report = os.path.join(d, "report.json")
    p = run([os.path.join(bindir, "stage-translate"), step, "--stage-to-report",
             "--format=json", "-o", report])
    if p.returncode != 0:
        out.fail("report failed: " + p.stderr[-2000:])
        shutil.rmtree(d)
        return out
    with open(report) as f:
        out.report = json.load(f)
    if not with_traces:
        shutil.rmtree(d)
        return out
    traces = os.path.join(d, "traces")
    p = run([os.path.join(bindir, "stage-translate"), step, "--stage-to-chakra",
             "--output-dir=" + traces])
    if p.returncode != 0:
        out.fail("traces failed: " + p.stderr[-2000:])
    else:
        v = run([os.path.join(bindir, "stage-trace"), "verify", traces,
                 "--jobs=1"])
        if v.returncode != 0 or "runs to completion" not in v.stdout:
            out.fail("verify failed: " + (v.stdout + v.stderr)[-2000:])
        out.digest = digest_dir(traces, [step, report])
        s = run([os.path.join(bindir, "stage-trace"), "stats", traces,
                 "--jobs=1"])
        if s.returncode != 0:
            out.fail("stats failed: " + s.stderr[-2000:])
        else:
            out.stats = json.loads(s.stdout)
    shutil.rmtree(d)
    return out


# ---------------------------------------------------------------------------
# The oracles
# ---------------------------------------------------------------------------


def stage_layers(text, model):
    """`0-3` or `0-1, 4-5`: the layers a stage's report says it holds (all
    of them without a pipeline)."""
    if not text:
        return list(range(model.L))
    layers = []
    for part in text.split(","):
        a, _, b = part.strip().partition("-")
        layers += range(int(a), int(b or a) + 1)
    return layers


def stage_params(plan, stage, layers):
    m = plan.model
    ps = [p for i in layers for p in m.layer_params(i)]
    if plan.holds_embedding(stage):
        ps += m.embedding_params()
    if plan.holds_head(stage):
        ps += m.head_params()
    return ps


def chunk_placement(plan, stages):
    """(copy, chunk) -> (rank, layers): where each chunk of the pipeline
    runs, from the parts of the layers each stage's report lists (a part
    per chunk); DualPipe's second copy of chunk j runs on rank pp - 1 - j."""
    parts = []
    for s in stages:
        text = s["layers"]
        for part in (text.split(",") if text else [""]):
            parts.append((s["stage"], stage_layers(part.strip(), plan.model)))
    ranges = sorted({tuple(layers) for _, layers in parts})
    out = {}
    for rank, layers in parts:
        j = ranges.index(tuple(layers))
        out[(1 if plan.mirrored and j != rank else 0, j)] = (rank, layers)
    return out


def block_copies(plan, placement, block):
    """Rank -> the copies of a Zamba2 shared block it holds: one per chunk
    with a layer that uses it."""
    m, copies = plan.model, {}
    for rank, layers in placement.values():
        if any(m.kinds[i] == "Z" and m.block_of(i) == block for i in layers):
            copies[rank] = copies.get(rank, 0) + 1
    return copies


def shared_params(plan, placement, rank):
    """The shared blocks' copies a rank holds (weights outside the layers'
    lists: counted once per chunk)."""
    m, ps = plan.model, []
    if m.zamba:
        for b in range(m.blocks):
            for _ in range(block_copies(plan, placement, b).get(rank, 0)):
                ps += m.shared_block_params()
    return ps


def expected_sharing_traffic(plan, placement):
    """Rank -> the messages of a Zamba2 pipeline beyond its boundaries: the
    embeddings from the first chunk to each chunk of another rank with a
    use (their gradients back), per micro-batch; and the sums of the shared
    blocks' gradients (a ZeRO shard) over the ranks holding copies: an
    all-reduce over pp when every rank of three or more holds one,
    otherwise each rank's last copy exchanges with every other rank's
    (copies on one rank hand over in memory)."""
    m, out = plan.model, {}
    if not m.zamba or plan.pp == 1:
        return out
    act = BF16 * tokens_per_rank(plan) * m.D // (plan.tp if plan.sp else 1)
    for copy in {c for c, _ in placement}:
        src = placement[(copy, 0)][0]
        for (c, j), (rank, layers) in placement.items():
            if c == copy and rank != src and \
                    any(m.kinds[i] == "Z" for i in layers):
                for r in (src, rank):
                    add(out.setdefault(r, {}), "send_pp", plan.runs * act)
                    add(out.setdefault(r, {}), "recv_pp", plan.runs * act)
    shard = BF16 * sum(local_elements(plan, p, plan.zero >= 1)
                       for p in m.shared_block_params())
    for b in range(m.blocks):
        copies = block_copies(plan, placement, b)
        n = len(copies)
        if n < 2:
            continue
        for r in copies:
            if n == plan.pp and plan.pp > 2:
                add(out.setdefault(r, {}), "all_reduce_pp", shard)
            else:
                add(out.setdefault(r, {}), "send_pp", (n - 1) * shard)
                add(out.setdefault(r, {}), "recv_pp", (n - 1) * shard)
    return out


def shared_sum_adds(plan, placement):
    """Elements added into the shared blocks' gradients before their
    updates, over all ranks: each rank's last copy adds its rank's other
    copies and, when the ranks exchange, every other rank's."""
    m = plan.model
    if not m.zamba or plan.pp == 1:
        return 0
    shard = sum(local_elements(plan, p, plan.zero >= 1)
                for p in m.shared_block_params())
    total = 0
    for b in range(m.blocks):
        copies = block_copies(plan, placement, b)
        if sum(copies.values()) < 2:
            continue
        n = len(copies)
        exchange = 0 if n == plan.pp and plan.pp > 2 else n - 1
        total += sum(k - 1 + exchange for k in copies.values()) * shard
    return total * plan.ranks_per_stage()


def use_sum_adds(plan, placement):
    """Elements added, over all ranks, where a chunk uses a shared block
    several times: each micro-batch's gradient of the block sums its uses
    there (one add per extra use, on the rank's tp share)."""
    m = plan.model
    if not m.zamba:
        return 0
    share = sum(p.count // p.tp_div(plan.tp) for p in m.shared_block_params())
    adds = 0
    for _, layers in placement.values():
        uses = [m.block_of(i) for i in layers if m.kinds[i] == "Z"]
        adds += sum(max(uses.count(b) - 1, 0) for b in range(m.blocks))
    return adds * share * plan.runs * plan.ranks_per_stage()


def local_elements(plan, p, zero_partitioned):
    """Elements of `p` one rank holds: split by tp (and ep for experts), and
    by the data-parallel ranks when ZeRO partitions this state."""
    n = p.count // p.tp_div(plan.tp)
    if p.expert:
        n //= plan.ep
    if zero_partitioned:
        n //= plan.data_ranks(p.expert)
    return n


def expected_states(plan, ps):
    z = plan.zero
    sum_ = lambda partitioned: sum(local_elements(plan, p, partitioned)
                                   for p in ps)
    return {
        "weights": BF16 * sum_(z >= 3),
        "gradients": BF16 * sum_(z >= 2),
        "master_weights": FP32 * sum_(z >= 1),
        "optimizer_moments": 2 * FP32 * sum_(z >= 1),
    }


def expected_dp_traffic(plan, ps):
    """Per rank, the data-parallel collectives of the ZeRO stage: key ->
    bytes, with the group named by its axes (dp, cp, ep where > 1)."""
    out = {}
    for expert in (False, True):
        axes = [a for a, d in (("dp", plan.dp), ("cp", plan.cp),
                               ("ep", 1 if expert else plan.ep)) if d > 1]
        if not axes:
            continue
        group = "_".join(axes)
        mine = [p for p in ps if p.expert == expert]
        if not mine:
            continue
        whole = BF16 * sum(local_elements(plan, p, False) for p in mine)
        shard = BF16 * sum(local_elements(plan, p, True) for p in mine)
        if plan.zero == 0:
            add(out, "all_reduce_" + group, whole)
        elif plan.zero == 1:
            add(out, "reduce_scatter_" + group, whole)
            add(out, "all_gather_" + group, shard)
        elif plan.zero == 2:
            add(out, "reduce_scatter_" + group, plan.runs * whole)
            add(out, "all_gather_" + group, shard)
        else:
            # FSDP: each weight gathered before its use forward and again
            # backward (a recomputed forward's gather serves the backward);
            # a layer's weight that the backward does not read is gathered
            # again only by a recomputed forward.
            unread = sum(BF16 * local_elements(plan, p, True)
                         for p in mine if not p.read_backward
                         and not (p.in_layer and plan.recompute == "full"))
            add(out, "reduce_scatter_" + group, plan.runs * whole)
            add(out, "all_gather_" + group, plan.runs * (2 * shard - unread))
    return out


def replicated_kv(plan):
    """More tp ranks than kv heads: every rank keeps all kv heads."""
    return not plan.model.mla and plan.tp > plan.model.KV


def grad_reductions(plan):
    """How often a gradient that is a partial sum over tp is reduced: once
    per iteration, or per micro-batch where ZeRO-2/3 reduce-scatters every
    micro-batch's gradient."""
    return plan.runs if plan.zero >= 2 else 1


def tokens_per_rank(plan):
    """Tokens of one micro-batch on one rank (before tp's sequence split)."""
    return BATCH * SEQ // (plan.M * plan.dp * plan.ep * plan.cp)


def add(table, key, v):
    if v:
        table[key] = table.get(key, 0) + v


def layer_widths(m, i):
    """The hidden widths (elements per token) that layer i's tensor-parallel
    collectives carry, Megatron-LM's column- and row-parallel layers under
    SP: the row-parallel outputs reduced forward (fwd_rs) and their
    gradients gathered backward (bwd_dy); the column-parallel inputs
    gathered forward (fwd_ag), re-gathered for the weight gradients
    (regather) and their gradients reduced backward (bwd_rs). MLA gathers
    its latents (q, kv, the shared rope key) instead of the hidden state;
    experts move their dispatched buffers, top-k times the tokens."""
    D = m.D
    if m.zamba and m.kinds[i] == "Z":
        # The Mamba block, then the shared block's attention (its input the
        # 2D channels of the layer's input and the embeddings) and MLP.
        # Under SP each adapter's down projection runs on the rank's share
        # of the tokens and its output (Ra wide) is gathered for the up
        # projection, and again for the up projection's weight gradient.
        rows, cols = [D, D, D], [D, 2 * D, D]
        adapters = [m.Ra] * m.adapters()
        return {"fwd_rs": rows, "fwd_ag": cols + adapters, "bwd_dy": rows,
                "regather": cols + adapters, "bwd_rs": cols}
    if m.ssm:  # one column- and row-parallel block per layer
        return {k: [D] for k in
                ("fwd_rs", "fwd_ag", "bwd_dy", "regather", "bwd_rs")}
    if m.mla:
        attn_ag, attn_regather = [m.Qr, m.Kr, m.Dr], [m.Qr, m.Kr]
        attn_rs = [m.Qr, m.Kr, m.Dr]
    else:
        attn_ag = attn_regather = attn_rs = [D]
    if m.parallel:
        # One norm's output gathered for both blocks, their partial sums
        # added and reduced once; backward, the output gradient gathered
        # once and the input's reduced once.
        return {k: [D] for k in
                ("fwd_rs", "fwd_ag", "bwd_dy", "regather", "bwd_rs")}
    if m.is_moe_layer(i):
        mlp = [m.K * D] + ([D] if m.Fs else [])
    else:
        mlp = [D]
    return {"fwd_rs": [D] + mlp, "fwd_ag": attn_ag + mlp,
            "bwd_dy": [D] + mlp, "regather": attn_regather + mlp,
            "bwd_rs": attn_rs + mlp}


def expected_model_traffic(plan, stage, layers, ps):
    """Per rank, the collectives of tp, cp, ep and pp over one iteration:
    key -> bytes (Megatron-LM's, docs/Sharding.md)."""
    # Each of the rank's chunks runs `runs` micro-batches.
    m, M, tp, out = plan.model, plan.runs, plan.tp, {}
    first, last = plan.holds_embedding(stage), plan.holds_head(stage)
    n = sum(1 for i in layers if m.has_attention(i))  # layers with k and v
    tokens = tokens_per_rank(plan)
    act = BF16 * tokens * m.D  # one micro-batch's hidden states, bytes
    full = plan.recompute == "full"
    if tp > 1:
        # Megatron-LM's tensor parallelism, by the hidden widths each
        # collective carries per token (see layer_widths); the embedding
        # reduces its partial sums forward and gathers its gradient (SP);
        # the head gathers forward, and reduces its input's gradient and
        # re-gathers its input backward (SP). A recomputed forward reduces
        # again, and its gathers replace the backward's re-gathers.
        fwd_rs = fwd_ag = bwd_dy = regather = bwd_rs = 0
        for i in layers:
            w = layer_widths(m, i)
            fwd_rs += sum(w["fwd_rs"])
            fwd_ag += sum(w["fwd_ag"])
            bwd_dy += sum(w["bwd_dy"])
            regather += sum(w["regather"])
            bwd_rs += sum(w["bwd_rs"])
        reduced = fwd_rs * (2 if full else 1) + bwd_rs \
            + m.D * (first + last)
        width = BF16 * tokens  # bytes per unit of width, one micro-batch
        if plan.sp:
            gathered = fwd_ag * (2 if full else 1) + bwd_dy \
                + (0 if full else regather) + m.D * (first + 2 * last)
            add(out, "reduce_scatter_tp", M * width * reduced)
            add(out, "all_gather_tp", M * width * gathered // tp)
        else:
            add(out, "all_reduce_tp", M * width * reduced)
    if tp > 1 and last:
        # The vocabulary-parallel cross-entropy: 3 fp32 statistics per token.
        add(out, "all_reduce_tp", M * 3 * FP32 * tokens)
    if tp > 1:
        # Under SP a weight that tp does not split sees its rank's part of
        # the sequence: its gradient is a partial sum over tp (the norms,
        # the router, MLA's down-projections, replicated kv projections,
        # the biases of row-parallel outputs, an expert's included).
        # ZeRO reduce-scatters it over the data ranks first: the tp
        # all-reduce moves a rank's shard. Under ZeRO-2/3 a row-parallel
        # output's bias sums instead the output gradient that the
        # contraction's backward gathers over tp anyway: no collective, tp
        # copies of the sum (counted in check()).
        # A weight every head applies sees its rank's heads, SP or not.
        partial = sum(local_elements(plan, p, plan.zero >= 1) for p in ps
                      if p.tp_div(tp) == 1
                      and (plan.sp or p.per_head(tp))
                      and not (p.output_bias and plan.zero >= 2))
        add(out, "all_reduce_tp", grad_reductions(plan) * BF16 * partial)
    kv_heads = m.KV // m.kv_div(tp)
    kv = BF16 * tokens * kv_heads * (m.Dqk + m.Dv)  # k and v of a micro-batch
    if replicated_kv(plan) and plan.sp:
        # Each rank projects the keys and values of its share of the
        # sequence: gathered over tp (and cp) forward and again backward,
        # their gradients reduce-scattered.
        axes = "_".join(a for a, d in (("cp", plan.cp), ("tp", tp)) if d > 1)
        add(out, "all_gather_" + axes, M * n * 2 * kv // tp)
        add(out, "reduce_scatter_" + axes, M * n * plan.cp * kv)
    elif plan.cp > 1:
        # Attention gathers k and v of the whole sequence forward, again
        # backward, and reduce-scatters their gradients.
        add(out, "all_gather_cp", M * n * 2 * kv)
        add(out, "reduce_scatter_cp", M * n * plan.cp * kv)
    if replicated_kv(plan) and not plan.sp:
        # The gradients of the replicated keys and values sum the query
        # heads of every rank (after cp's reduce-scatter, when there is one).
        add(out, "all_reduce_tp", M * n * kv)
    if plan.ep > 1:
        # Dispatch and combine forward, their gradients backward, and the
        # recomputed forward's again: tokens x top-k x hidden each.
        moe = sum(1 for i in layers if m.is_moe_layer(i))
        local = tokens // (tp if plan.sp else 1)
        add(out, "all_to_all_ep",
            M * moe * (6 if full else 4) * local * m.K * m.D * BF16)
    if plan.pp > 1:
        boundary = act // (tp if plan.sp else 1)
        # Every chunk receives and sends, but the first and the last; the
        # turn of a V hands over in memory.
        turn = 2 if plan.vshape and stage == plan.pp - 1 else 0
        chunks = 2 * plan.v - first - last - turn
        add(out, "send_pp", M * chunks * boundary)
        add(out, "recv_pp", M * chunks * boundary)
    if plan.mirrored:
        # Each gradient the optimizer reads (a ZeRO shard) goes to the
        # rank holding the other copy, and that copy's comes back (a shared
        # block's are summed over all its copies instead).
        exchanged = BF16 * sum(local_elements(plan, p, plan.zero >= 1)
                               for p in ps if not p.shared)
        add(out, "send_pp", exchanged)
        add(out, "recv_pp", exchanged)
    return out


def expected_contraction(plan):
    """Matrix FLOPs of the whole job: the unsharded step's, plus what every
    tp rank repeats without SP."""
    m, T = plan.model, BATCH * SEQ
    S, H, Dqk, Dv = SEQ, m.H, m.Dqk, m.Dv
    # The score matrices of all attention layers, per unit of head width.
    scores = sum(2 * BATCH * S * m.keys[i] * H for i in range(m.L)
                 if m.has_attention(i))
    # A chunked scan's backward is twice its forward, like a weight's.
    layers_fwd = sum(2 * T * m.matmul_weights_per_token(i) +
                     T * (m.ssd_per_token(i) + m.delta_per_token(i))
                     for i in range(m.L)) + \
        scores * (Dqk + Dv)
    head = 2 * T * m.D * m.V
    fwd = layers_fwd + head
    bwd = 2 * (fwd - scores * (Dqk + Dv)) \
        + scores * (2 * Dqk + 2 * Dv) + scores * Dqk
    recompute = {"none": 0, "selective": scores * (Dqk + Dv),
                 "full": layers_fwd}[plan.recompute]
    total = fwd + bwd + recompute
    if plan.tp > 1 and plan.sp and m.zamba:
        # Under SP an adapter's gradient is a partial sum over the heads (or
        # ffn channels) of the ranks: its down projection's input and weight
        # gradients run on the whole sequence on every tp rank.
        total += (plan.tp - 1) * 2 * 2 * T * len(m.uses) * m.adapter_downs()
    if plan.tp > 1 and not plan.sp:
        # Without SP every tp rank multiplies all tokens by the weights tp
        # does not split (the router, MLA's down-projections, replicated kv
        # projections): tp - 1 extra copies, forward, twice backward, and
        # again when recomputed. (With SP each rank takes its share of the
        # tokens.)
        extra = 2 * T * (plan.tp - 1) * sum(
            m.replicated_matmul_weights_per_token(i, plan.tp)
            for i in range(m.L))
        total += extra * (3 + (plan.recompute == "full"))
    return total


# ---------------------------------------------------------------------------
# The checks
# ---------------------------------------------------------------------------


def value(section, key):
    q = section.get(key)
    return q["value"] if q else 0


def check(out, base):
    """Checks one plan's report and trace statistics; `base` is the report of
    the same model, tp, sp and recomputation on one data-parallel rank and
    stage, one micro-batch, without ZeRO."""
    plan, r, st = out.plan, out.report, out.stats
    rps = plan.ranks_per_stage()
    gpus = r.get("job", {}).get("gpus")
    if gpus != rps * plan.pp:
        out.fail(f"report: {gpus} GPUs, the plan has {rps * plan.pp}")
    stages = r["stages"]
    if len(stages) != plan.pp:
        out.fail(f"report: {len(stages)} stages, the plan has {plan.pp}")
        return
    # --- model states, per stage ---
    all_layers = []
    placement = chunk_placement(plan, stages)
    sharing = expected_sharing_traffic(plan, placement)
    for s in stages:
        layers = stage_layers(s["layers"], plan.model)
        all_layers += layers
        ps = stage_params(plan, s["stage"], layers) + \
            shared_params(plan, placement, s["stage"])
        for key, want in expected_states(plan, ps).items():
            got = value(s["memory"], key)
            if got != want:
                out.fail(f"stage {s['stage']} {key}: {got} B, closed form "
                         f"{want} B")
        traffic = expected_model_traffic(plan, s["stage"], layers, ps)
        for key, v in expected_dp_traffic(plan, ps).items():
            add(traffic, key, v)
        for key, v in sharing.get(s["stage"], {}).items():
            add(traffic, key, v)
        comm = s["communication"]
        for key in sorted(set(traffic) | set(comm)):
            got, want = value(comm, key), traffic.get(key, 0)
            if got != want:
                out.fail(f"stage {s['stage']} {key}: {got} B, closed form "
                         f"{want} B")
    copies = 2 if plan.mirrored else 1
    if sorted(all_layers) != sorted(list(range(plan.model.L)) * copies):
        out.fail(f"stages hold layers {sorted(all_layers)}")
    # --- work ---
    contraction = sum(value(s["flops"], "contraction") * rps for s in stages)
    want = expected_contraction(plan)
    if contraction != want:
        out.fail(f"contraction FLOPs over all ranks: {contraction}, closed "
                 f"form {want} ({contraction - want:+d})")
    # --- work by phase: the same as the plan without dp, cp, ep, pp and
    # ZeRO (same tp, sp and recomputation), but for the gradient
    # accumulation of the micro-batches and the optimizer, which work on the
    # state each rank holds: (M - 1) adds per gradient element, and per fp32
    # master element AdamW's 16 FLOPs plus 1 for the master copy
    # (docs/CostModel.md).
    if base is not None:
        grads = sum(value(s["memory"], "gradients") * rps for s in stages) // BF16
        masters = sum(value(s["memory"], "master_weights") * rps
                      for s in stages) // FP32
        phases = {k: sum(value(s["flops"], k) * rps for s in stages)
                  for k in ("forward", "backward", "recompute",
                            "attention_kernel_recompute", "optimizer")}
        want = {k: value(base["stages"][0]["flops"], k) * plan.tp
                for k in phases}
        want["backward"] += (plan.runs - 1) * grads
        # The shared blocks' uses summed per chunk and micro-batch, where
        # the base sums them once.
        whole = {(0, 0): (0, list(range(plan.model.L)))}
        unsplit = Plan(plan.model, 1, plan.tp, 1, 1, 1, 0, plan.recompute,
                       "1f1b", plan.sp, 1)
        want["backward"] += use_sum_adds(plan, placement) - \
            use_sum_adds(unsplit, whole)
        if plan.sp and plan.zero >= 2:
            # Each tp rank sums the whole gathered output gradient into a
            # row-parallel output's bias (see expected_model_traffic):
            # tokens x width per bias, tp - 1 more times than split.
            m = plan.model
            widths = sum((m.D if m.has_attention(i) else 0) +
                         (m.K * m.D if m.is_moe_layer(i) else 0)
                         for i in range(m.L)) if m.gptoss else 0
            want["backward"] += (plan.tp - 1) * BATCH * SEQ * widths
        # DualPipe adds the other copy's gradient: one FLOP per element
        # (a shared block's copies are summed instead, shared_sum_adds).
        want["optimizer"] = 17 * masters + shared_sum_adds(plan, placement)
        if plan.mirrored:
            shared = sum(local_elements(plan, p, plan.zero >= 1)
                         for s in stages
                         for p in shared_params(plan, placement, s["stage"]))
            want["optimizer"] += masters - shared * rps
        for k, got in phases.items():
            if got != want[k]:
                out.fail(f"{k} FLOPs over all ranks: {got}, the unsplit "
                         f"step's {want[k]} ({got - want[k]:+d})")
    # --- the traces against the report ---
    if st is None:
        return
    if st["ranks"] != rps * plan.pp:
        out.fail(f"traces: {st['ranks']} ranks, the plan has {rps * plan.pp}")
        return
    kinds = {"ALL_REDUCE": "all_reduce_", "ALL_GATHER": "all_gather_",
             "REDUCE_SCATTER": "reduce_scatter_", "ALL_TO_ALL": "all_to_all_"}
    for t in st["traces"]:
        s = stages[t["rank"] // rps]
        flops = value(s["flops"], "total")
        # A compute node of no FLOPs is written as 1 (ASTRA-sim's roofline
        # divides by it): at most one FLOP more per compute node.
        extra = t["flops"] - flops
        if not 0 <= extra <= t["nodes"].get("compute", 0):
            out.fail(f"rank {t['rank']}: traces {t['flops']} FLOPs, report "
                     f"{flops}")
        comm = s["communication"]
        for kind, prefix in kinds.items():
            want = sum(q["value"] for k, q in comm.items()
                       if k.startswith(prefix))
            got = t["collective_bytes"].get(kind, 0)
            if got != want:
                out.fail(f"rank {t['rank']}: traces {got} B of {kind}, "
                         f"report {want} B")
        for k in ("send", "recv"):
            if t[k + "_bytes"] != value(comm, k + "_pp"):
                out.fail(f"rank {t['rank']}: traces {t[k + '_bytes']} B "
                         f"{k}, report {value(comm, k + '_pp')} B")
        if len(out.failures) > 20:  # enough to see what is wrong
            break


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bindir")
    ap.add_argument("configs")
    ap.add_argument("work")
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--models",
                    default="llama-tiny,mistral-tiny,mixtral-tiny,deepseek-tiny,"
                    "gpt-oss-tiny,qwen3-next-tiny,cohere-tiny,hybrid-tiny,"
                    "zamba2-tiny")
    ap.add_argument("--show", type=int, default=5)
    ap.add_argument("--digests", help="write each plan's hash of its step, "
                    "report and traces to this file")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    jobs = []
    for name in args.models.split(","):
        with open(os.path.join(args.configs, name + ".json")) as f:
            model = Model(name, json.load(f))
        mlir = os.path.join(args.work, name + ".mlir")
        p = run([os.path.join(args.bindir, "stage-translate"),
                 "--import-hf-config", os.path.join(args.configs, name + ".json"),
                 f"--batch={BATCH}", f"--seq={SEQ}", "-o", mlir])
        if p.returncode != 0:
            sys.exit(f"import of {name} failed: {p.stderr}")
        jobs += [(mlir, plan) for plan in enumerate_plans(model)]
    # The unsplit plans the vector work is compared with.
    bases = {}
    for mlir, plan in jobs:
        key = (plan.model.name, plan.tp, plan.sp, plan.recompute)
        if key not in bases:
            bases[key] = (mlir, Plan(plan.model, 1, plan.tp, 1, 1, 1, 0,
                                     plan.recompute, "1f1b", plan.sp, 1))
    keys = list(bases)
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        outcomes = list(pool.map(
            lambda j: run_plan(args.bindir, j[0], j[1], args.work), jobs))
        base_outcomes = list(pool.map(
            lambda k: run_plan(args.bindir, bases[k][0], bases[k][1],
                               args.work, with_traces=False), keys))
    base_reports = {k: o.report for k, o in zip(keys, base_outcomes)}
    failed, kinds = 0, {}
    for out in outcomes:
        # Every plan of the matrix divides the models evenly: the planner
        # must accept it.
        if out.rejected:
            out.fail("rejected: " + out.rejected.split("error: ", 1)[-1])
        elif out.report is not None and not out.failures:
            plan = out.plan
            try:
                check(out, base_reports.get((plan.model.name, plan.tp, plan.sp,
                                             plan.recompute)))
            except (KeyError, TypeError, ValueError) as e:
                out.fail(f"the report lacks what the checks read: {e!r}")
        if not out.failures:
            continue
        failed += 1
        if failed <= args.show:
            print(f"FAIL {out.plan.model.name}: {out.plan.options()}")
            for f in out.failures[:8]:
                print("    " + f)
        # Which checks failed, without the numbers.
        for kind in {re.sub(r"\d+", "#", f.split(":")[0]) for f in out.failures}:
            kinds[kind] = kinds.get(kind, 0) + 1
    if args.digests:
        with open(args.digests, "w") as f:
            for out in outcomes:
                f.write(f"{out.plan.model.name} {out.plan.options()}: "
                        f"{out.digest}\n")
    print(f"plans: {len(outcomes)}, failed {failed}")
    for kind, n in sorted(kinds.items(), key=lambda kv: -kv[1]):
        print(f"  {n} plans: {kind}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
