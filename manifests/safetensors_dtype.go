package manifests

// DType is a safetensors element type, spelled as in the header ("BF16").
type DType string

// dtypeKind decides how DiffCheckpoints compares elements: floats within a
// tolerance, everything else bit for bit.
type dtypeKind uint8

const (
	kindBool dtypeKind = iota
	kindUint
	kindInt
	kindFloat
)

// dtypeInfo is everything the package knows about one dtype.
type dtypeInfo struct {
	size   int // bytes per element
	kind   dtypeKind
	decode decodeFunc // raw little-endian elements to float64
}

// dtypes is the one table of supported dtypes; a header naming any other is
// refused with ErrUnknownDType.
var dtypes = map[DType]dtypeInfo{
	"BOOL":    {1, kindBool, decodeU8},
	"U8":      {1, kindUint, decodeU8},
	"I8":      {1, kindInt, decodeI8},
	"U16":     {2, kindUint, decodeU16},
	"I16":     {2, kindInt, decodeI16},
	"F16":     {2, kindFloat, decodeF16},
	"BF16":    {2, kindFloat, decodeBF16},
	"U32":     {4, kindUint, decodeU32},
	"I32":     {4, kindInt, decodeI32},
	"F32":     {4, kindFloat, decodeF32},
	"U64":     {8, kindUint, decodeU64},
	"I64":     {8, kindInt, decodeI64},
	"F64":     {8, kindFloat, decodeF64},
	"F8_E4M3": {1, kindFloat, decodeF8E4M3},
	"F8_E5M2": {1, kindFloat, decodeF8E5M2},
}

// Size returns the bytes per element, or 0 for a dtype outside the table.
func (d DType) Size() int { return dtypes[d].size }

// Known reports whether d is in the dtype table.
func (d DType) Known() bool {
	_, ok := dtypes[d]
	return ok
}
