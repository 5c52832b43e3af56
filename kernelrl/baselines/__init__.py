"""The baselines every candidate is measured against: torch.matmul, cuBLAS and cuBLASLt, as lean native calls."""

BASELINES = ("torch", "cublas_nn", "cublas_tn", "cublaslt_heur_nn", "cublaslt_heur_tn", "cublaslt_auto_nn",
             "cublaslt_auto_tn")
