"""What the forward path may call without it counting as PyTorch compute, and the GEMM/conv sets
that the ``standard`` preset lets stay library calls."""

from __future__ import annotations

from ._tensor_methods import TENSOR_METHODS

# Tensor methods that only allocate, view, copy, cast or query.
TENSOR_OK = frozenset("""
view view_as reshape reshape_as contiguous size stride storage_offset numel nelement dim ndimension
data_ptr is_contiguous to cuda cpu flatten unflatten unsqueeze unsqueeze_ squeeze squeeze_ permute
transpose transpose_ t t_ expand expand_as narrow select unbind split split_with_sizes chunk
tensor_split element_size new_empty new_empty_strided new_zeros new_ones new_full new_tensor item
tolist clone copy_ zero_ fill_ detach detach_ requires_grad_ is_floating_point is_complex is_signed
get_device type type_as float double half bfloat16 int long short bool char byte movedim moveaxis
swapaxes swapdims as_strided unfold untyped_storage storage dim_order is_pinned pin_memory
record_stream retain_grad register_hook is_set_to is_shared share_memory_ resize_ resize_as_
is_same_size is_inference is_meta is_quantized has_names refine_names rename align_to const_data_ptr
mutable_data_ptr resize resize_as broadcast_to swapaxes_ swapdims_ unsafe_chunk unsafe_split
unsafe_split_with_sizes dsplit hsplit vsplit diagonal is_conj is_neg is_coalesced is_distributed dense_dim
sparse_dim storage_type ipu mtia xpu module_load cdouble cfloat ravel narrow_copy new
register_post_accumulate_grad_hook
""".split())

# Tensor methods that compute (everything callable on torch.Tensor that is not in TENSOR_OK).
# "add", "index", "values" and "sort" also name list/dict/set methods: only "sort" is kept.
TENSOR_COMPUTE = frozenset(TENSOR_METHODS - TENSOR_OK - {"add", "index", "values"})
TENSOR_GEMM = frozenset({"matmul", "mm", "bmm", "addmm", "addmm_", "baddbmm", "baddbmm_", "addbmm",
                         "addbmm_", "__matmul__", "__rmatmul__", "__imatmul__"})

TORCH_OK = frozenset(f"torch.{n}" for n in """
empty empty_like empty_strided empty_permuted zeros zeros_like ones ones_like full full_like tensor
as_tensor arange Size device dtype layout memory_format finfo iinfo is_tensor is_floating_point
is_complex is_storage numel typename get_default_dtype result_type promote_types can_cast
is_grad_enabled is_inference_mode_enabled no_grad inference_mode enable_grad set_grad_enabled
broadcast_shapes as_strided broadcast_to reshape flatten unflatten squeeze unsqueeze permute transpose
t narrow select unbind split chunk tensor_split movedim moveaxis swapaxes swapdims view_as_real
view_as_complex Tensor Generator _assert strided sparse_coo contiguous_format channels_last
channels_last_3d preserve_format jit.is_scripting jit.is_tracing compiler.is_compiling
compiler.is_dynamo_compiling library.wrap_triton library.triton_op library.custom_op library.register_fake
autograd.Function nn.Module nn.Parameter nn.Buffer
Stream Event __version__ FloatTensor DoubleTensor LongTensor IntTensor BoolTensor ByteTensor
""".split())
TORCH_OK_PREFIXES = ("torch.cuda.", "torch.version.", "torch.backends.", "torch.types.",
                     "torch.utils.cpp_extension.", "torch.amp.", "torch.autograd.function.")
TORCH_DTYPES = frozenset(f"torch.{n}" for n in """
float float32 float64 double float16 half bfloat16 int int8 int16 int32 int64 long short uint8 uint16
uint32 uint64 bool complex64 complex128 cfloat cdouble complex32 chalf float8_e4m3fn float8_e5m2
float8_e4m3fnuz float8_e5m2fnuz float8_e8m0fnu qint8 quint8 qint32
""".split())

TORCH_GEMM = frozenset(f"torch.{n}" for n in """
matmul mm bmm addmm baddbmm addbmm conv1d conv2d conv3d conv_transpose1d conv_transpose2d
conv_transpose3d convolution nn.functional.linear nn.functional.conv1d nn.functional.conv2d
nn.functional.conv3d nn.functional.conv_transpose1d nn.functional.conv_transpose2d
nn.functional.conv_transpose3d Tensor.matmul Tensor.mm Tensor.bmm Tensor.addmm Tensor.baddbmm
ops.aten.mm ops.aten.bmm ops.aten.addmm ops.aten.baddbmm ops.aten.matmul ops.aten.convolution
""".split()) | {"triton.ops.matmul", "operator.matmul", "operator.imatmul"}

# torch.nn modules: which hold no compute, which are GEMM/conv, which are containers.
NN_NONCOMPUTE = frozenset({"Parameter", "ParameterList", "ParameterDict", "Buffer", "Identity",
                           "Flatten", "Unflatten", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d",
                           "AlphaDropout", "FeatureAlphaDropout", "Module"})
NN_CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict"})
NN_GEMM = frozenset({"Linear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
                     "ConvTranspose2d", "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d"})
# methods of a torch.nn module that do not run it
MODULE_SAFE_METHODS = frozenset({"parameters", "named_parameters", "buffers", "named_buffers",
                                 "children", "named_children", "modules", "named_modules",
                                 "state_dict", "extra_repr", "to", "cuda", "cpu", "float", "double",
                                 "half", "bfloat16", "type", "eval", "train", "requires_grad_",
                                 "zero_grad", "register_buffer", "register_parameter", "get_parameter",
                                 "get_buffer", "_get_name"})

NUMPY_OK = frozenset({"prod", "ceil", "floor", "log2", "sqrt", "dtype", "float32", "float64",
                      "int32", "int64", "iinfo", "finfo", "isscalar"})

# Third-party libraries whose kernels would replace the solution's own (library-op substitution).
THIRD_PARTY = frozenset({"flash_attn", "xformers", "apex", "liger_kernel", "torchvision", "torchaudio",
                         "transformer_engine", "bitsandbytes", "deepspeed", "jax", "jaxlib",
                         "tensorflow", "scipy", "sklearn", "cupy", "cupyx", "numba", "kernels",
                         "fbgemm_gpu", "vllm", "sgl_kernel", "flashinfer", "torchao", "mamba_ssm",
                         "causal_conv1d", "torch_scatter", "torch_sparse", "pykeops", "onnxruntime",
                         "tensorrt", "torch_tensorrt", "cutlass_library", "thunderkittens", "quack"})

# C++: torch::/at::/c10:: calls that only allocate, query or guard.
CPP_OK = frozenset("""
empty empty_like empty_strided zeros zeros_like ones ones_like full full_like arange from_blob
TensorOptions dtype device Device Scalar IntArrayRef ArrayRef ScalarType Tensor getCurrentCUDAStream
getDefaultCUDAStream CUDAGuard OptionalCUDAGuard DeviceGuard OptionalDeviceGuard current_device
device_of elementSize toString typeMetaToScalarType getCurrentDeviceProperties getDeviceProperties
optional make_optional MemoryFormat Layout CUDAStream TensorArg checkAllSameGPU checkContiguous
RestrictPtrTraits DefaultPtrTraits get_device isFloatingType kCUDA getCurrentCUDAStream
""".split())
CPP_GEMM = frozenset("""
matmul mm bmm addmm baddbmm addbmm linear conv1d conv2d conv3d conv_transpose1d conv_transpose2d
conv_transpose3d convolution _convolution cudnn_convolution gemm getCurrentCUDABlasHandle
getCurrentCUDABlasLtHandle
""".split())


def torch_name_ok(name: str, call: bool) -> bool:
    """May the forward path use ``torch.<...>`` (``name`` fully resolved) without it being compute?"""
    if name in TORCH_OK or name.startswith(TORCH_OK_PREFIXES):
        return True
    if not call and name in TORCH_DTYPES:
        return True
    if name.startswith("torch.Tensor."):
        return name.split(".", 2)[2] in TENSOR_OK
    if name.startswith("torch.nn.") and name.rsplit(".", 1)[-1] in NN_NONCOMPUTE:
        return True
    return False
