"""How the GPU tests hand `api.knn` to the runtime's oracle: launch(outputs, inputs) filling (dist, idx)."""


def knn_launch(metric, k, exclude_self=False):
    """launch(outputs, inputs) for runtime.check.check_kernel: api.knn of inputs (q, x), copied into outputs."""
    from kernels.knn import api

    def launch(outputs, inputs):
        dist, idx = api.knn(inputs[0], inputs[1], k, metric=metric, exclude_self=exclude_self)
        outputs[0].copy_(dist)
        outputs[1].copy_(idx)

    return launch
