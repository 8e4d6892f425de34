"""Tiny transformers configs (kwargs of its config classes) the tests build models of, on the meta device or saved:
a small decoder, DeepSeek-V2-Lite's latent attention and experts, a Gated DeltaNet hybrid, and experts."""

TINY = dict(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2)


#: DeepSeek-V2-Lite's layout at tiny widths: latent attention without query compression (q_proj), its
#: kv_a_layernorm, the first layer dense, then routed and shared experts
TINY_MLA = dict(TINY, num_key_value_heads=4, q_lora_rank=None, kv_lora_rank=6, qk_rope_head_dim=4,
                qk_nope_head_dim=4, v_head_dim=2, moe_intermediate_size=8, n_routed_experts=4, num_experts_per_tok=2,
                n_shared_experts=2, first_k_dense_replace=1, n_group=1, topk_group=1)


#: a Gated DeltaNet layer then a full-attention layer (2 key heads, 4 value heads, a kernel of 3), and experts
DELTANET = dict(head_dim=8, linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=4,
                linear_value_head_dim=6, linear_conv_kernel_dim=3, layer_types=["linear_attention", "full_attention"])
EXPERTS = dict(num_experts=3, num_experts_per_tok=2, moe_intermediate_size=8, shared_expert_intermediate_size=12)
