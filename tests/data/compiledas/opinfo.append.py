    UnaryUfuncInfo('conj_physical',
                   dtypes=all_types_and_complex_and(torch.bool, torch.half, torch.bfloat16),
                   skips=(
                       # RuntimeError: Expected self.is_complex() to be true, but got false.
                       DecorateInfo(unittest.expectedFailure, 'TestCommon', 'test_out', device_type='mps'),
                       DecorateInfo(unittest.expectedFailure, 'TestCommon', 'test_out_warning', device_type='mps'),
                   )),
