"""Remote-code families: model_types the hub serves with ``trust_remote_code`` modeling files and transformers
does not ship, counted from vLLM's implementation (vllm/model_executor/models/<name>.py, the engine that
serves them: its weight shapes are what a checkpoint loads into) and the hub's own configuration / modeling
code (its class defaults are the builders' defaults here: no transformers class exists to generate them).

- InternLM2 / 2.5 (``internlm2``; InternLM3 is transformers' ``internlm3``): Llama with GQA whose q, k and v
  are one fused ``attention.wqkv`` stored per KV group, (K, G + 2, head_dim) rows (G query heads, then that
  group's k and v: vLLM ``InternLM2Attention.split_qkv``), ``attention.wo``, a SwiGLU ``feed_forward`` of
  ``w1`` (gate), ``w3`` (up), ``w2`` (down), ``attention_norm`` / ``ffn_norm``, ``model.tok_embeddings`` and an
  untied ``output`` head. head_dim is hidden / heads. ``bias`` (InternLM2Config's default true; every
  published config says false) puts a bias on wqkv and wo (the hub's modeling_internlm2.py; vLLM builds
  neither and cannot load such a checkpoint).
- Qwen (1) (``qwen``: Qwen-1.8B / 7B / 14B / 72B): pre-RMSNorm blocks under ``transformer.h`` (``ln_1``,
  ``ln_2``, ``ln_f``, ``wte``), multi-head attention whose ``attn.c_attn`` is one biased [q; k; v] projection
  of 3 × kv_channels × heads rows and ``attn.c_proj`` its bias-free output; a SwiGLU MLP of ``intermediate_size
  // 2`` (``mlp.w2`` the gate through SiLU, ``mlp.w1`` the up, ``mlp.c_proj`` the down: vLLM merges
  ``[w2, w1]`` into its gate_up_proj), bias-free (``no_bias``, true by default and in every published config;
  false puts a bias on c_proj, w1, w2 and the MLP's c_proj, as the hub's code builds them); an untied
  ``lm_head``. RoPE of base ``rotary_emb_base`` on ``rotary_pct`` of each head. ``use_dynamic_ntk`` and
  ``use_logn_attn`` change nothing up to ``seq_length`` (the hub's code: NTK alpha 1 and log-n factor 1 there);
  past it (Qwen-14B: seq_length 2048, max_position_embeddings 8192) they rescale RoPE and the queries, which
  is not modelled (a caveat says so); the counts do not depend on them.
"""

from __future__ import annotations

from ..errors import UnsupportedModelError
from ..fields import Fields
from ..mixers import Attention
from ..spec import MLP, CheckpointLayout, Layer, ModelSpec, Norm
from .common import Traits, pre_norms, read_act, read_mha_core, read_rotary, read_tie

_SILU = Traits()  # hidden_act, default silu (both remote configs' default)

# ---- InternLM2 -----------------------------------------------------------------------------------

#: InternLM2ForCausalLM's checkpoint names -> ours; wqkv's rows are per KV group (K, G + 2, d), as Falcon's
INTERNLM2_LAYOUT = CheckpointLayout(
    renames=(("model.tok_embeddings.", "model.embed_tokens."), ("output.", "lm_head.")),
    modules=((".attention.wqkv.", ".self_attn.qkv_proj."), (".attention.wo.", ".self_attn.o_proj."),
             (".feed_forward.w1.", ".mlp.gate_proj."), (".feed_forward.w3.", ".mlp.up_proj."),
             (".feed_forward.w2.", ".mlp.down_proj."),
             (".attention_norm.", ".input_layernorm."), (".ffn_norm.", ".post_attention_layernorm.")),
    qkv_grouped=True)


def build_internlm2(f: Fields, model_type: str) -> ModelSpec:
    # InternLM2Config (the hub's configuration_internlm2.py) defaults
    hidden, n_layers, heads, hd, vocab = read_mha_core(f, dict(hidden_size=4096, num_hidden_layers=32,
                                                           num_attention_heads=32, vocab_size=103168))
    kv = f.int("num_key_value_heads", lambda: heads, note="absent: equal to num_attention_heads (no GQA)")
    if kv > heads or heads % kv:
        raise f.error("num_key_value_heads", f"({kv}) must divide num_attention_heads ({heads})")
    bias = f.bool("bias", True, note="InternLM2Config's default")
    intermediate = f.int("intermediate_size", 11008)
    act = read_act(f, _SILU)
    theta, rotary_dim, scaling = read_rotary(f, hd)
    attn = Attention(hidden, heads, kv, hd, hd, bias, bias, bias, bias, fused_qkv=True, rotary_dim=rotary_dim,
                     rope_theta=theta)
    layer = Layer(attn, MLP(hidden, intermediate, act=act), pre_norms(lambda: Norm(hidden)))
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=(layer,) * n_layers,
        tie_word_embeddings=read_tie(f, False), final_norm=Norm(hidden), hidden_act=act,
        norm_eps=f.float("rms_norm_eps", 1e-6), rope_scaling=scaling, checkpoint=INTERNLM2_LAYOUT,
    )


# ---- Qwen (1) ------------------------------------------------------------------------------------

#: QWenLMHeadModel's checkpoint names -> ours; c_attn's rows are [q; k; v] (vLLM: view(3, heads, d, hidden))
QWEN_LAYOUT = CheckpointLayout(
    renames=(("transformer.wte.", "model.embed_tokens."), ("transformer.h.", "model.layers."),
             ("transformer.ln_f.", "model.norm.")),
    modules=((".attn.c_attn.", ".self_attn.qkv_proj."), (".attn.c_proj.", ".self_attn.o_proj."),
             (".mlp.w2.", ".mlp.gate_proj."), (".mlp.w1.", ".mlp.up_proj."), (".mlp.c_proj.", ".mlp.down_proj."),
             (".ln_1.", ".input_layernorm."), (".ln_2.", ".post_attention_layernorm.")))


def build_qwen(f: Fields, model_type: str) -> ModelSpec:
    # QWenConfig (the hub's configuration_qwen.py) defaults
    hidden, n_layers, heads, hd, vocab = read_mha_core(f, dict(hidden_size=4096, num_hidden_layers=32,
                                                           num_attention_heads=32, vocab_size=151936))
    kv_channels = f.int("kv_channels", 128)
    if kv_channels != hd:
        # QWenAttention: c_attn is 3 x kv_channels x heads wide but c_proj is Linear(hidden_size, kv_channels x
        # heads) applied to heads x (hidden / heads) features: it runs only when the two agree (vLLM: hidden / heads)
        raise f.error("kv_channels", f"({kv_channels}) must equal hidden_size / num_attention_heads ({hd}): "
                                     "Qwen's attention output projection runs only then")
    full = f.int("intermediate_size", 22016)
    if full % 2:
        raise f.error("intermediate_size", f"({full}) must be even: Qwen's w1 / w2 are intermediate_size / 2 wide")
    inner = f.derived("mlp_width", full // 2, "intermediate_size / 2: the width of w1, w2 and c_proj's input")
    bias = not f.bool("no_bias", True, note="QWenConfig's default")
    # QWenModel: RoPE of base rotary_emb_base over kv_channels x rotary_pct channels (rope_theta / rope_scaling unread)
    theta = f.float("rotary_emb_base", 10000.0)
    pct = f.float("rotary_pct", 1.0)
    if pct > 1:
        raise f.error("rotary_pct", f"must be in (0, 1], got {pct}")
    rotary_dim = kv_channels if pct == 1.0 else int(kv_channels * pct)
    if rotary_dim < 2:
        raise f.error("rotary_pct", f"({pct}) leaves {rotary_dim} rotary channels of {kv_channels}")
    act = read_act(f, _SILU)
    attn = Attention(hidden, heads, heads, hd, hd, True, True, True, bias, fused_qkv=True, rotary_dim=rotary_dim,
                     rope_theta=theta)
    layer = Layer(attn, MLP(hidden, inner, bias=bias, act=act), pre_norms(lambda: Norm(hidden)))
    caveats: tuple[str, ...] = ()
    seq = f.raw("seq_length")
    pos = f.raw("max_position_embeddings")
    if isinstance(seq, int) and isinstance(pos, int) and pos > seq and \
            (f.bool("use_dynamic_ntk", True) or f.bool("use_logn_attn", True)):
        caveats = (f"Qwen: past seq_length ({seq}) the hub's code rescales RoPE (dynamic NTK) and the queries (log-n); "
                   "not modelled (counts unaffected; numerics as within seq_length)",)
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=(layer,) * n_layers,
        tie_word_embeddings=read_tie(f, False), final_norm=Norm(hidden), hidden_act=act,
        norm_eps=f.float("layer_norm_epsilon", 1e-6), checkpoint=QWEN_LAYOUT, caveats=caveats,
    )


# ---- Baichuan / Baichuan 2 -----------------------------------------------------------------------

#: Baichuan's checkpoint names are Llama's but for W_pack, one [q; k; v] projection (vLLM: chunk(3))
BAICHUAN_LAYOUT = CheckpointLayout(modules=((".self_attn.W_pack.", ".self_attn.qkv_proj."),))
BAICHUAN2_VOCAB = 125696  # vLLM tells Baichuan 2 (NormHead) from Baichuan 1 by this vocabulary size


def build_baichuan(f: Fields, model_type: str) -> ModelSpec:
    """Baichuan 7B / 13B and Baichuan 2 7B / 13B (all ``baichuan``), as vLLM's baichuan.py builds them:
    multi-head attention with one bias-free ``W_pack`` ([q; k; v], hidden rows each) and a bias-free ``o_proj``,
    a Llama SwiGLU MLP, RMSNorms, an untied ``lm_head``. Positions: RoPE (base 10000) for the 7B models,
    ALiBi (BLOOM's slopes, no RoPE) for the 13B ones; vLLM decides by the class (``BaiChuanForCausalLM``,
    Baichuan 1 7B: RoPE) else by ``hidden_size == 4096`` (RoPE; else ALiBi), as its BaichuanForCausalLM does.
    Baichuan 2 (vocabulary 125696) normalises each lm_head row (NormHead): the same parameters, normalised as
    the checkpoint is loaded. Class defaults: Baichuan 2 7B's configuration_baichuan.py."""
    hidden, n_layers, heads, hd, vocab = read_mha_core(f, dict(hidden_size=4096, num_hidden_layers=32,
                                                           num_attention_heads=32, vocab_size=BAICHUAN2_VOCAB))
    intermediate = f.int("intermediate_size", 11008)
    act = read_act(f, _SILU)
    arch = f.raw("architectures")
    rope = (isinstance(arch, list) and "BaiChuanForCausalLM" in arch) or hidden == 4096
    theta = f.float("rope_theta", 10000.0) if rope else 10000.0
    attn = Attention(hidden, heads, heads, hd, hd, fused_qkv=True, rotary_dim=hd if rope else 0, rope_theta=theta,
                     alibi=not rope)
    layer = Layer(attn, MLP(hidden, intermediate, act=act), pre_norms(lambda: Norm(hidden)))
    tie = read_tie(f, False)
    layout = BAICHUAN_LAYOUT
    if vocab == BAICHUAN2_VOCAB:
        if tie:
            raise f.error("tie_word_embeddings", "is true, but Baichuan 2's NormHead (normalised lm_head rows) "
                                                 "cannot share the embedding")
        layout = CheckpointLayout(modules=BAICHUAN_LAYOUT.modules, head_normalized=True)
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=(layer,) * n_layers,
        tie_word_embeddings=tie, final_norm=Norm(hidden), hidden_act=act, norm_eps=f.float("rms_norm_eps", 1e-6),
        checkpoint=layout, caveats=(f"Baichuan: {'RoPE' if rope else 'ALiBi'} positions, chosen as vLLM does "
                                    "(BaiChuanForCausalLM or hidden_size 4096: RoPE; else ALiBi)",),
    )


# ---- MiniCPM -------------------------------------------------------------------------------------


def build_minicpm(f: Fields, model_type: str) -> ModelSpec:
    """MiniCPM 1 / 2 / 4 and MiniCPM-MoE (``minicpm``), as vLLM's minicpm.py and the hub's modeling_minicpm.py
    build them: Llama (GQA, q/k/v/o biased by ``attention_bias``, default false; head_dim hidden / heads; RoPE)
    with MiniCPM's multipliers: the embedding times ``scale_emb``, each residual branch times ``scale_depth /
    sqrt(num_hidden_layers)``, the final hidden state divided by ``hidden_size / dim_model_base`` before the
    head (tied by default). With ``num_experts`` (MiniCPM-MoE-8x2B) every layer's MLP is that many experts of
    ``intermediate_size`` (``mlp.experts.N.w1 / w3 / w2``, router ``mlp.gate``), top-``num_experts_per_tok`` of
    a softmax, renormalised. Class defaults: MiniCPMConfig's (scale_emb, dim_model_base, scale_depth 1).
    MiniCPM4's ``sparse_config`` (InfLLM v2 sparse attention) is not modelled: counted and priced as dense
    attention, which is how vLLM's minicpm.py serves it."""
    from ..spec import MoE, Numerics

    hidden, n_layers, heads, hd, vocab = read_mha_core(f, dict(hidden_size=4096, num_hidden_layers=32,
                                                           num_attention_heads=32, vocab_size=32000))
    kv = f.int("num_key_value_heads", lambda: heads, note="absent: equal to num_attention_heads (no GQA)")
    if kv > heads or heads % kv:
        raise f.error("num_key_value_heads", f"({kv}) must divide num_attention_heads ({heads})")
    bias = f.bool("attention_bias", False)
    intermediate = f.int("intermediate_size", 11008)
    act = read_act(f, _SILU)
    theta, rotary_dim, scaling = read_rotary(f, hd)
    attn = Attention(hidden, heads, kv, hd, hd, bias, bias, bias, bias, rotary_dim=rotary_dim, rope_theta=theta)
    n_exp = f.int("num_experts", 0, lo=0, hi=1 << 16)
    if n_exp:
        k = f.int("num_experts_per_tok", 2)
        if k > n_exp:
            raise f.error("num_experts_per_tok", f"({k}) exceeds num_experts ({n_exp})")
        ffn = MoE(hidden, n_exp, k, intermediate, act=act)
    else:
        ffn = MLP(hidden, intermediate, act=act)
    layer = Layer(attn, ffn, pre_norms(lambda: Norm(hidden)))
    scale_emb = f.float("scale_emb", 1.0, note="MiniCPMConfig's default")
    depth = f.float("scale_depth", 1.0, note="MiniCPMConfig's default")
    base = f.float("dim_model_base", 1.0, note="MiniCPMConfig's default")
    num = Numerics(residual_multiplier=depth / n_layers ** 0.5, logits_scaling=hidden / base, norm_topk_prob=True)
    caveats = ("MiniCPM4's sparse_config (InfLLM v2 sparse attention) is not modelled: priced as dense attention, "
               "as vLLM's minicpm.py serves it",) if f.raw("sparse_config") is not None else ()
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=(layer,) * n_layers,
        tie_word_embeddings=read_tie(f, True), final_norm=Norm(hidden), hidden_act=act,
        norm_eps=f.float("rms_norm_eps", 1e-6), embedding_multiplier=scale_emb, rope_scaling=scaling, numerics=num,
        caveats=caveats,
    )


# ---- MiMo ----------------------------------------------------------------------------------------


def build_mimo(f: Fields, model_type: str) -> ModelSpec:
    """Xiaomi MiMo-7B (``mimo``): Qwen2 (transformers' qwen2 row: q/k/v biased, o not, Qwen2's sliding-window
    fields) plus ``num_nextn_predict_layers`` multi-token-prediction layers (``model.mtp_layers.N``: a Qwen2
    decoder layer, token_layernorm, hidden_layernorm, input_proj (2·hidden -> hidden, no bias),
    final_layernorm; the hub's modeling_mimo.py). vLLM's mimo.py serves the Qwen2 model and skips the
    ``mtp_layers`` tensors (they load only into its separate MTP speculative-decoding model), so the MTP
    parameters are reported as ``mtp`` and not counted in the total, as for DeepSeek V3."""
    from dataclasses import replace

    from . import REGISTRY
    from . import decoder as _decoder
    from .common import mtp_layers

    from ..family_defaults import FAMILY_DEFAULTS
    from ..fields import CORE_FIELDS

    if not f.defaults:  # MiMoConfig(Qwen2Config): Qwen2's class defaults, num_nextn_predict_layers 0
        f.defaults = {k: v for k, v in FAMILY_DEFAULTS["qwen2"].items() if k not in CORE_FIELDS}
    spec = _decoder.build(f, model_type, REGISTRY["qwen2"])
    hidden = spec.hidden_size
    mtp = mtp_layers(f, list(spec.layers))
    return replace(spec, mtp_layers=mtp, mtp_extra_params=len(mtp) * (3 * hidden + 2 * hidden * hidden))


# ---- TeleChat / TeleChat2 ------------------------------------------------------------------------


def build_telechat(f: Fields, model_type: str) -> ModelSpec:
    """TeleChat (1) 7B / 12B and TeleChat2 3B / 7B / 35B / 115B (``telechat``: TelechatConfig /
    Telechat2Config, the hub's configuration_telechat*.py), as vLLM's telechat2.py builds them: Llama
    (``transformer.h.N``) whose ``self_attention`` has a bias-free ``query`` and ``key_value`` (per head
    [k_h; v_h], de-interleaved on load) and a biased output ``dense``; an MLP of bias-free ``gate_proj`` /
    ``up_proj`` and a biased ``down_proj`` (SiLU: vLLM forces silu whatever ``hidden_act`` says);
    RMSNorms (``layer_norm_epsilon``). Fields: ``n_layer``, ``n_head``, ``ffn_hidden_size``, ``n_embed``
    (aliases); head_dim hidden / heads. ``num_key_value_heads`` (absent: heads) is read as vLLM's LlamaAttention
    does. Class defaults: TeleChat-7B's (vocab 160256, hidden 4096, 30 layers, 32 heads, ffn 12288); the
    embedding is tied unless ``tie_word_embeddings`` is false (PretrainedConfig's default: TeleChat-7B ties,
    12B and TeleChat2 untie; ``telechat2``, a transformers port's LlamaConfig subclass with Llama's field names,
    unties by default). ``embed_layernorm`` (a LayerNorm after the embedding) is not built by vLLM: refused."""
    moe = [k for k, v in f.cfg.items() if ("expert" in k.lower() or k.lower().startswith("moe")
                                           or k.lower() in ("is_moe", "use_moe"))
           and (v is True or not isinstance(v, bool) and v not in (None, 0, 1, "", {}, []))]
    if moe:  # TeleChat2-39B-A12B (16 experts, top 4, Tele-AI/TeleChat2 MoE/README.md): no config.json of it at hand
        raise UnsupportedModelError(f"{f.where}: a TeleChat mixture of experts ({', '.join(moe)} set: "
                                    "TeleChat2-39B-A12B's kind) is not modelled; TeleChat's builder is dense and "
                                    "would count one MLP a layer", "a dense reading would miscount it, so none is given")
    hidden, n_layers, heads, hd, vocab = read_mha_core(f, dict(hidden_size=4096, num_hidden_layers=30,
                                                           num_attention_heads=32, vocab_size=160256))
    kv = f.int("num_key_value_heads", lambda: heads, note="absent: equal to num_attention_heads (no GQA)")
    if kv > heads or heads % kv:
        raise f.error("num_key_value_heads", f"({kv}) must divide num_attention_heads ({heads})")
    if f.bool("embed_layernorm", False, note="TelechatConfig's default"):
        raise f.error("embed_layernorm", "is true: TeleChat's word-embedding LayerNorm is not modelled (vLLM's "
                                         "telechat2.py does not build it)")
    if f.bool("apply_residual_connection_post_layernorm", False, note="TelechatConfig's default"):
        raise f.error("apply_residual_connection_post_layernorm", "is true: TeleChat's post-norm residual is not "
                                                                  "modelled (vLLM's telechat2.py is pre-norm only)")
    intermediate = f.int("intermediate_size", 12288)
    f.derived("hidden_act", "silu", "vLLM's telechat2.py sets hidden_act = silu whatever the config says")
    theta, rotary_dim, scaling = read_rotary(f, hd)
    attn = Attention(hidden, heads, kv, hd, hd, False, False, False, True, rotary_dim=rotary_dim, rope_theta=theta)
    layer = Layer(attn, MLP(hidden, intermediate, act="silu", down_bias=True), pre_norms(lambda: Norm(hidden)))
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=(layer,) * n_layers,
        # TeleChat2Config(LlamaConfig) of the transformers port (model_type telechat2): untied by default
        tie_word_embeddings=read_tie(f, model_type != "telechat2"), final_norm=Norm(hidden), hidden_act="silu",
        norm_eps=f.float("rms_norm_eps", 1e-5), rope_scaling=scaling,
        caveats=("TeleChat: real checkpoints' fused key_value (per-head [k; v]) is not mapped for `verify` loading",),
        checkpoint=CheckpointLayout(kv_fused=True),  # key_value: one stored matrix (one GPTQ g_idx)
    )


# ---- Orion ---------------------------------------------------------------------------------------


def build_orion(f: Fields, model_type: str) -> ModelSpec:
    """OrionStar Orion-14B (``orion``), as vLLM's orion.py and the hub's modeling_orion.py build it: Llama (GQA,
    bias-free q/k/v/o and SwiGLU MLP, RoPE over the whole head, head_dim hidden / heads) whose norms are
    LayerNorms WITH bias (``nn.LayerNorm(hidden, eps=rms_norm_eps)``: input, post-attention and final); an
    untied ``lm_head``. Defaults: Orion-14B's config.json (the only published shape; the hub's OrionConfig
    was not at hand to read its class defaults)."""
    hidden, n_layers, heads, hd, vocab = read_mha_core(f, dict(hidden_size=5120, num_hidden_layers=40,
                                                           num_attention_heads=40, vocab_size=84608))
    kv = f.int("num_key_value_heads", lambda: heads, note="absent: equal to num_attention_heads (no GQA)")
    if kv > heads or heads % kv:
        raise f.error("num_key_value_heads", f"({kv}) must divide num_attention_heads ({heads})")
    intermediate = f.int("intermediate_size", 15360)
    act = read_act(f, _SILU)
    theta, rotary_dim, scaling = read_rotary(f, hd)
    attn = Attention(hidden, heads, kv, hd, hd, rotary_dim=rotary_dim, rope_theta=theta)
    from ..spec import NormKind

    def ln() -> Norm:
        return Norm(hidden, NormKind.LAYER, bias=True)

    layer = Layer(attn, MLP(hidden, intermediate, act=act), pre_norms(ln))
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=(layer,) * n_layers,
        tie_word_embeddings=read_tie(f, False), final_norm=ln(), hidden_act=act,
        norm_eps=f.float("rms_norm_eps", 1e-5), rope_scaling=scaling,
    )


# ---- XVERSE --------------------------------------------------------------------------------------


def build_xverse(f: Fields, model_type: str) -> ModelSpec:
    """XVERSE-7B / 13B / 65B (``xverse``): vLLM serves ``XverseForCausalLM`` with its LlamaForCausalLM (the
    registry maps it to ``("llama", "LlamaForCausalLM")``), so it is read as transformers' llama row with
    LlamaConfig's defaults (bias-free, GQA via num_key_value_heads: XVERSE-65B; untied head; RoPE).
    XVERSE-MoE-A4.2B (``num_experts``) is the same model_type with a DeepSeek-style MoE vLLM does not serve (SGLang's
    xverse_moe.py does): refused, no released config.json being at hand to check a count against."""
    from . import REGISTRY
    from . import decoder as _decoder

    from ..family_defaults import FAMILY_DEFAULTS
    from ..fields import CORE_FIELDS

    if f.raw("num_experts") not in (None, 0, 1):
        raise f.error("num_experts", "is set: XVERSE-MoE's experts (shared + routed, the hub's modeling_xverse.py) "
                                     "are not modelled (vLLM serves only the dense XVERSE as Llama; SGLang's "
                                     "xverse_moe.py serves the MoE)")
    if not f.defaults:  # XverseConfig: LlamaConfig's fields and defaults
        f.defaults = {k: v for k, v in FAMILY_DEFAULTS["llama"].items() if k not in CORE_FIELDS}
    return _decoder.build(f, model_type, REGISTRY["llama"])


# ---- InternLM (1) --------------------------------------------------------------------------------


def build_internlm(f: Fields, model_type: str) -> ModelSpec:
    """InternLM v1 (``internlm``: internlm-7b, internlm-chat-7b, internlm-20b, internlm-chat-20b), as the hub's
    modeling_internlm.py builds it and vLLM serves it (``InternLMForCausalLM`` -> its LlamaForCausalLM, whose
    attention bias is ``attention_bias or bias`` on q, k, v and o): Llama multi-head attention whose q/k/v/o
    carry a bias when ``bias`` (InternLMConfig's default true: internlm-7b; internlm-20b says false), a
    bias-free SwiGLU MLP, RMSNorms, an untied ``lm_head``; head_dim hidden / heads. RoPE's base is
    ``rotary.base`` (default 10000); ``rotary.type`` "dynamic" (dynamic NTK) changes nothing up to
    ``max_position_embeddings`` (its base grows only past it: a caveat says so). The hub's attention is
    multi-head only: a ``num_key_value_heads`` other than the head count is refused (vLLM would build GQA
    shapes no InternLM checkpoint has). Class defaults: InternLMConfig's (internlm-7b).

    InternLM2's first hub revisions (internlm2-7b / internlm2-chat-7b, and fine-tunes cut from them) say
    ``model_type: internlm`` beside ``architectures: [InternLM2ForCausalLM]`` and an auto_map into
    modeling_internlm2.py; that class (vLLM's internlm2.py, chosen by the architecture) is InternLM2's."""
    arch = f.raw("architectures")
    if isinstance(arch, list) and "InternLM2ForCausalLM" in arch:
        return build_internlm2(f, model_type)
    hidden, n_layers, heads, hd, vocab = read_mha_core(f, dict(hidden_size=4096, num_hidden_layers=32,
                                                           num_attention_heads=32, vocab_size=103168))
    kv = f.int("num_key_value_heads", lambda: heads, note="absent: equal to num_attention_heads (no GQA)")
    if kv != heads:
        raise f.error("num_key_value_heads", f"({kv}) differs from num_attention_heads ({heads}): InternLM's "
                                             "attention (modeling_internlm.py) is multi-head only")
    bias = f.bool("bias", True, note="InternLMConfig's default")
    intermediate = f.int("intermediate_size", 11008)
    act = read_act(f, _SILU)
    rotary = f.raw("rotary")
    if rotary is None:
        rotary = {"base": 10000, "type": "dynamic"}  # InternLMConfig's default
        f.defaulted("rotary", "{base: 10000, type: dynamic}", "InternLMConfig's default")
    if not isinstance(rotary, dict):
        raise f.error("rotary", f"must be an object like {{\"base\": 10000, \"type\": \"dynamic\"}}, got {rotary!r}")
    kind = rotary.get("type", "dynamic")
    if kind not in ("origin", "dynamic"):
        raise f.error("rotary", f"type {kind!r} is not one of InternLM's 'origin', 'dynamic'")
    base = rotary.get("base", 10000)
    if isinstance(base, bool) or not isinstance(base, (int, float)) or base <= 1:
        raise f.error("rotary", f"base must be a number > 1, got {base!r}")
    attn = Attention(hidden, heads, heads, hd, hd, bias, bias, bias, bias, rotary_dim=hd, rope_theta=float(base))
    layer = Layer(attn, MLP(hidden, intermediate, act=act), pre_norms(lambda: Norm(hidden)))
    caveats: tuple[str, ...] = ()
    if kind == "dynamic":
        pos = f.raw("max_position_embeddings")
        caveats = (f"InternLM: rotary type 'dynamic' (NTK) grows RoPE's base past max_position_embeddings "
                   f"({pos if isinstance(pos, int) else 2048}); not modelled (counts unaffected)",)
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=(layer,) * n_layers,
        tie_word_embeddings=read_tie(f, False), final_norm=Norm(hidden), hidden_act=act,
        norm_eps=f.float("rms_norm_eps", 1e-6), caveats=caveats,
    )


# ---- openPangu-Embedded --------------------------------------------------------------------------

#: config fields of vLLM's openpangu.py variants that the dense openPangu-Embedded reading does not model
_PANGU_UNMODELLED = (
    ("sandwich_norm", "sandwich norms (post-attention / pre- and post-MLP RMSNorms)"),
    ("use_mhc", "multi-stream hyper-connections (mHC)"),
    ("param_sink_number", "learned attention-sink keys / values (OpenPanguSinkAttention)"),
    ("interleaved_sliding_window", "interleaved sliding-window attention"),
    ("n_routed_experts", "routed experts (openPangu Pro / Ultra MoE)"),
    ("kv_lora_rank", "multi-head latent attention (openPangu Ultra MoE)"),
)


def build_pangu_embedded(f: Fields, model_type: str) -> ModelSpec:
    """openPangu-Embedded-1B / 7B (``PanguEmbedded``; a transformers port names it ``openpangu_dense``), as
    the hub's modeling_openpangu_dense.py builds it and vLLM's openpangu.py serves it
    (``PanguEmbeddedForCausalLM``: OpenPanguEmbeddedAttention + OpenPanguMLP): Llama with GQA, q/k/v and o
    biased when ``bias`` (PanguEmbeddedConfig's default true; vLLM: ``attention_bias or bias``, and a
    ``qkv_bias`` field, when present, decides q/k/v alone), a SwiGLU MLP biased only by ``mlp_bias`` (absent:
    none), RMSNorms, head_dim ``head_dim`` else hidden / heads, RoPE over the whole head (neox style).
    Class defaults: PanguEmbeddedConfig's (openPangu-Embedded-7B). vLLM's openpangu.py also serves variants
    with sandwich norms, hyper-connections, attention sinks, sliding windows, MLA and MoE (the Pro / Ultra
    MoE model_types); a config of this model_type that sets one of those is refused by name."""
    for key, what in _PANGU_UNMODELLED:
        if f.raw(key) not in (None, False, 0):
            raise f.error(key, f"is set: {what} of vLLM's openpangu.py are not modelled for openPangu-Embedded")
    from .common import read_head_dim

    hidden, n_layers, heads, _, vocab = read_mha_core(f, dict(hidden_size=4096, num_hidden_layers=34,
                                                          num_attention_heads=32, vocab_size=153376))
    kv = f.int("num_key_value_heads", 8, note="PanguEmbeddedConfig's default")
    if kv > heads or heads % kv:
        raise f.error("num_key_value_heads", f"({kv}) must divide num_attention_heads ({heads})")
    hd = read_head_dim(f, hidden, heads)
    o_bias = f.bool("attention_bias", False) or f.bool("bias", True, note="PanguEmbeddedConfig's default")
    qkv_bias = f.bool("qkv_bias") if f.has("qkv_bias") else o_bias
    intermediate = f.int("intermediate_size", 12800)
    act = read_act(f, _SILU)
    if act != "silu":
        raise f.error("hidden_act", f"({act}): vLLM's openpangu.py supports only silu")
    theta = f.float("rope_theta", 16000000.0, note="PanguEmbeddedConfig's default")
    attn = Attention(hidden, heads, kv, hd, hd, qkv_bias, qkv_bias, qkv_bias, o_bias, rotary_dim=hd, rope_theta=theta)
    mlp = MLP(hidden, intermediate, bias=f.bool("mlp_bias", False), act=act)
    layer = Layer(attn, mlp, pre_norms(lambda: Norm(hidden)))
    return ModelSpec(
        model_type=model_type, hidden_size=hidden, vocab_size=vocab, layers=(layer,) * n_layers,
        tie_word_embeddings=read_tie(f, False), final_norm=Norm(hidden), hidden_act=act,
        norm_eps=f.float("rms_norm_eps", 1e-5),
    )


# ---- Aquila / Aquila2, Skywork: vLLM serves them as Llama ----------------------------------------


def build_llama_served(f: Fields, model_type: str) -> ModelSpec:
    """BAAI Aquila / Aquila2 (``aquila``: ``AquilaForCausalLM`` / ``AquilaModel``, which vLLM's registry maps
    to its LlamaForCausalLM) and Skywork-13B (``skywork``: ``SkyworkForCausalLM``, whose hub modeling_skywork.py
    is Llama's; TensorRT-LLM and ms-swift run it as Llama) and ServiceNow Apriel-5B (``apriel``:
    ``AprielForCausalLM``, Llama with its own ``head_dim`` (24 heads of 128 on a 4096 hidden) and YaRN RoPE, as
    chatllm.cpp's AprielConverter reads it): read as transformers' llama row with LlamaConfig's
    defaults (bias-free, GQA via num_key_value_heads as in Aquila2-34B, untied head, RoPE). A config with
    experts (``num_experts``) is a different model: refused."""
    from . import REGISTRY
    from . import decoder as _decoder

    from ..family_defaults import FAMILY_DEFAULTS
    from ..fields import CORE_FIELDS

    for key in ("num_experts", "num_local_experts", "n_routed_experts"):
        if f.raw(key) not in (None, 0, 1):
            raise f.error(key, f"is set: model_type '{model_type}' is read as Llama (dense); its experts are not "
                               "modelled")
    if not f.defaults:  # the hub's config classes are LlamaConfig's fields and defaults
        f.defaults = {k: v for k, v in FAMILY_DEFAULTS["llama"].items() if k not in CORE_FIELDS}
    return _decoder.build(f, model_type, REGISTRY["llama"])
