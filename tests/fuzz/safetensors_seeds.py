# safetensors_seeds.py DIR: writes the hand-made hostile seeds of
# tests/fuzz/corpus/fuzz_safetensors (python3 tests/fuzz/safetensors_seeds.py
# tests/fuzz/corpus/fuzz_safetensors). 'J' seeds are a JSON header, a NUL and
# the data (fuzz_safetensors.c writes the length); 'raw_' seeds are whole files.
import json, struct, sys, os
out = sys.argv[1]
def raw(name, b): open(os.path.join(out, name), 'wb').write(b)
def J(name, header, data=b''):      # the harness prepends the length
    raw(name, b'J' + header.encode() + b'\0' + data)
def full(header, data=b''):
    h = header.encode(); return struct.pack('<Q', len(h)) + h + data
f32 = lambda *v: struct.pack('<%df' % len(v), *v)
J('ok_f32', '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', f32(1, 2))
J('ok_three', '{"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},'
  '"i":{"dtype":"I64","shape":[1],"data_offsets":[16,24]},"m":{"dtype":"BOOL","shape":[3],"data_offsets":[24,27]}}',
  f32(1, 2, 3, 4) + struct.pack('<q', -5) + b'\1\0\1')
J('unsorted', '{"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', f32(1, 2))
J('overlap', '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', f32(1, 2))
J('gap', '{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', f32(1, 2))
J('out_of_range', '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8000000000]}}', f32(1, 2))
J('begin_after_end', '{"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}}', f32(1, 2))
J('dtype_vs_bytes', '{"a":{"dtype":"I64","shape":[2],"data_offsets":[0,8]}}', f32(1, 2))
J('shape_overflow', '{"a":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,0]}}')
J('shape_overflow_zero', '{"a":{"dtype":"F32","shape":[0,9223372036854775807,9223372036854775807],"data_offsets":[0,0]}}')
J('huge_number', '{"a":{"dtype":"F32","shape":[99999999999999999999999],"data_offsets":[0,4]}}', f32(1))
J('negative', '{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}', f32(1))
J('float_shape', '{"a":{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}}', f32(1))
J('nine_dims', '{"a":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,4]}}', f32(1))
J('nested', '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":' + '[' * 40 + ']' * 40 + '}}', f32(1))
J('nested_ok', '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":{"y":[1,{"z":null}],"t":true}}}', f32(1))
J('dup_tensor', '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', f32(1, 2))
J('dup_field', '{"a":{"dtype":"F32","shape":[1],"dtype":"I64","data_offsets":[0,4]}}', f32(1))
J('dup_metadata', '{"__metadata__":{"a":"b"},"__metadata__":{"c":"d"}}')
J('metadata_dup_key', '{"__metadata__":{"a":"b","a":"c"}}')
J('metadata_number', '{"__metadata__":{"a":1}}')
J('metadata_empty', '{"__metadata__":{}}')
J('metadata_only', '{"__metadata__":{"k\\u00e9y":"v\\ud83d\\ude00","<script>":"</script>"}}')
J('lone_surrogate', '{"\\ud800":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}', f32(1))
J('nul_name', '{"a\\u0000b":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}', f32(1))
J('bad_utf8', '{"a\xff":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}'.encode('latin-1').decode('latin-1'), f32(1))
J('unknown_dtype', '{"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}}', f32(1))
J('bool_byte', '{"a":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}}', b'\1\2')
J('scalar', '{"a":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}', f32(3))
J('empty_tensor', '{"a":{"dtype":"F32","shape":[0,5],"data_offsets":[0,0]}}')
J('empty_header', '{}')
J('padded', '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}      ', f32(1))
J('trailing', '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}x', f32(1))
J('missing_field', '{"a":{"dtype":"F32","shape":[1]}}', f32(1))
J('not_object', '[1,2]')
J('many', '{' + ','.join('"t%d":{"dtype":"BOOL","shape":[1],"data_offsets":[%d,%d]}' % (i, i, i + 1) for i in range(200)) + '}', b'\1' * 200)
raw('raw_ok', full('{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', f32(1)))
raw('raw_short', b'\x10\0\0')
raw('raw_len_huge', struct.pack('<Q', 2**64 - 1) + b'{}')
raw('raw_len_past_end', struct.pack('<Q', 100) + b'{}')
raw('raw_len_one', struct.pack('<Q', 1) + b'{')
raw('raw_len_zero', struct.pack('<Q', 0))
