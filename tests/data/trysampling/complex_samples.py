# Hand-written for mpsgen's tests: OpInfo entries whose sample functions feed complex values with
# finite parts only (make_tensor, plus an exact zero base) or with an inf among them.


def sample_inputs_power_like(op, device, dtype, requires_grad, **kwargs):
    yield from sample_inputs_elementwise_binary(op, device, dtype, requires_grad, **kwargs)
    if dtype.is_complex:
        base = torch.zeros(3, device=device, dtype=dtype)
        yield SampleInput(base, torch.tensor([2j, 1, 0.5 + 1j], device=device, dtype=dtype))


def sample_inputs_with_special_values(op, device, dtype, requires_grad, **kwargs):
    yield from sample_inputs_elementwise_binary(op, device, dtype, requires_grad, **kwargs)
    lhs = torch.tensor([1.0, float('inf')], device=device, dtype=dtype)
    yield SampleInput(lhs, torch.ones_like(lhs))


def sample_inputs_with_limits(op, device, dtype, requires_grad, **kwargs):
    top = torch.finfo(dtype).max
    yield SampleInput(torch.tensor([top], device=device, dtype=dtype), torch.ones(1, device=device, dtype=dtype))


op_db = [
    BinaryUfuncInfo('pow',
                    sample_inputs_func=sample_inputs_power_like,
                    lhs_make_tensor_kwargs=dict(low=0)),
    BinaryUfuncInfo('hypot',
                    sample_inputs_func=sample_inputs_with_special_values),
    BinaryUfuncInfo('atan2'),
    BinaryUfuncInfo('xlogy',
                    sample_inputs_func=sample_inputs_with_limits),
    BinaryUfuncInfo('fmod',
                    sample_inputs_func=lambda op, device, dtype, requires_grad, **kwargs: ()),
    OpInfo('polar',
           sample_inputs_func=sample_inputs_elsewhere),
]
