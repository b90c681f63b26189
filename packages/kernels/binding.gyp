{
  "variables": {
    "use_blas%": "<!(node scripts/detect-blas.mjs)"
  },
  "targets": [
    {
      "target_name": "opentinker_kernels",
      "sources": [
        "src/binding.cc",
        "src/cpu/thread_pool.cc",
        "src/cpu/gemm.cc",
        "src/cpu/gemm_packed.cc",
        "src/cpu/gemm_dot.cc",
        "src/cpu/gemm_binding.cc",
        "src/cpu/gemm_bf16.cc",
        "src/cpu/gemm_amx.cc",
        "src/cpu/gemm_bf16_binding.cc",
        "src/cpu/isa.cc",
        "src/cpu/lora.cc",
        "src/cpu/lora_binding.cc",
        "src/cpu/attention.cc",
        "src/cpu/attention_train.cc",
        "src/cpu/attention_binding.cc",
        "src/cpu/norm.cc",
        "src/cpu/rope.cc",
        "src/cpu/activation.cc",
        "src/cpu/add.cc",
        "src/cpu/embedding.cc",
        "src/cpu/elementwise_binding.cc",
        "src/cpu/softmax.cc",
        "src/cpu/loss_binding.cc",
        "src/cpu/optim.cc",
        "src/cpu/optim_binding.cc",
        "src/cpu/sample.cc",
        "src/cpu/sample_draw.cc"
      ],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")", "src/cpu"],
      "defines": ["NAPI_VERSION=8", "NODE_ADDON_API_DISABLE_DEPRECATED", "NAPI_CPP_EXCEPTIONS"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions", "-fno-rtti", "-std=gnu++17"],
      "cflags_cc": ["-std=c++17", "-O3", "-fno-math-errno", "-fexceptions", "-Wall", "-Wextra", "-Wno-unused-parameter"],
      "ldflags": ["-pthread"],
      "conditions": [
        ["target_arch=='x64'", {
          "cflags_cc": ["-march=x86-64-v3"]
        }, {
          "cflags_cc": ["-march=native"]
        }],
        ["use_blas==1", {
          "defines": ["OT_HAVE_CBLAS=1"],
          "libraries": ["-lopenblas"]
        }]
      ]
    }
  ]
}
