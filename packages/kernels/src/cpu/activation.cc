// Placeholder while the module is written; replaced by the real kernels.
