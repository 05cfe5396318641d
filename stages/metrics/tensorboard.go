package metrics

import (
	"encoding/binary"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of the protobuf messages in a TensorBoard event file, from
// tensorflow/tensorboard tensorboard/compat/proto/{event,summary,tensor,
// tensor_shape,types}.proto (the same numbers as TensorFlow's own copies).
const (
	// message Event: double wall_time = 1 (not kept: a Point has no time);
	// int64 step = 2; oneof what { …; Summary summary = 5; … }.
	eventStep    = 2
	eventSummary = 5

	// message Summary: repeated Value value = 1.
	summaryValue = 1

	// message Summary.Value: string tag = 1; oneof value { float
	// simple_value = 2; …; TensorProto tensor = 8 }. PyTorch's SummaryWriter
	// writes simple_value; TensorFlow 2 writes a rank-0 tensor.
	valueTag    = 1
	valueSimple = 2
	valueTensor = 8

	// message TensorProto: DataType dtype = 1; TensorShapeProto
	// tensor_shape = 2; bytes tensor_content = 4; repeated float float_val =
	// 5 [packed]; repeated double double_val = 6 [packed]; repeated int32
	// int_val = 7 [packed]; repeated int64 int64_val = 10 [packed].
	tensorDtype   = 1
	tensorShape   = 2
	tensorContent = 4
	tensorFloat   = 5
	tensorDouble  = 6
	tensorInt32   = 7
	tensorInt64   = 10

	// message TensorShapeProto: repeated Dim dim = 2; Dim: int64 size = 1.
	shapeDim = 2
	dimSize  = 1

	// enum DataType.
	dtFloat  = 1
	dtDouble = 2
	dtInt32  = 3
	dtInt64  = 9
)

// decodeEvent adds the scalars of one serialized Event to sk as one record.
// Events without a summary (the file_version header, graphs, session logs)
// are counted as ignored; summary values that are not scalars (images,
// histograms, text) as skipped.
func decodeEvent(sk *sink, b []byte) error {
	sk.begin()
	var step int64
	hasSummary := false
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte, u uint64) error {
		switch {
		case num == eventStep && typ == protowire.VarintType:
			step = int64(u)
		case num == eventSummary && typ == protowire.BytesType:
			hasSummary = true
			return eachField(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
				if num == summaryValue && typ == protowire.BytesType {
					return decodeValue(sk, v)
				}
				return nil
			})
		}
		return nil
	})
	switch {
	case err != nil:
		sk.drop()
		return fmt.Errorf("decode event: %w", err)
	case !hasSummary:
		sk.stats.Ignored++
	default:
		sk.commit(step)
	}
	return nil
}

// decodeValue adds one Summary.Value to sk if it holds a scalar.
func decodeValue(sk *sink, b []byte) error {
	var tag, tensor []byte
	var simple float64
	hasSimple, hasTensor := false, false
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte, u uint64) error {
		switch {
		case num == valueTag && typ == protowire.BytesType:
			tag = v
		case num == valueSimple && typ == protowire.Fixed32Type:
			simple, hasSimple = float64(math.Float32frombits(uint32(u))), true
		case num == valueTensor && typ == protowire.BytesType:
			tensor, hasTensor = v, true
		}
		return nil
	})
	if err != nil {
		return err
	}
	v, ok := simple, hasSimple
	if !ok && hasTensor {
		if v, ok, err = tensorScalar(tensor); err != nil {
			return fmt.Errorf("tensor %q: %w", tag, err)
		}
	}
	if !ok {
		sk.stats.Skipped++
		return nil
	}
	sk.add(tag, v)
	return nil
}

// tensorScalar returns the value of a tensor that holds exactly one number
// of type float, double, int32 or int64, whether in a typed field or in
// tensor_content; any other tensor is reported as not a scalar.
func tensorScalar(b []byte) (float64, bool, error) {
	var dtype uint64
	elems := int64(1) // rank 0 unless a shape says otherwise
	var vals []float64
	var content []byte
	hasContent := false
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte, u uint64) error {
		switch {
		case num == tensorDtype && typ == protowire.VarintType:
			dtype = u
		case num == tensorShape && typ == protowire.BytesType:
			var err error
			elems, err = shapeElems(v)
			return err
		case num == tensorContent && typ == protowire.BytesType:
			content, hasContent = v, true
		case num == tensorFloat:
			return appendRepeated(&vals, typ, v, u, protowire.Fixed32Type, func(x uint64) float64 {
				return float64(math.Float32frombits(uint32(x)))
			})
		case num == tensorDouble:
			return appendRepeated(&vals, typ, v, u, protowire.Fixed64Type, math.Float64frombits)
		case num == tensorInt32:
			return appendRepeated(&vals, typ, v, u, protowire.VarintType, func(x uint64) float64 { return float64(int32(x)) })
		case num == tensorInt64:
			return appendRepeated(&vals, typ, v, u, protowire.VarintType, func(x uint64) float64 { return float64(int64(x)) })
		}
		return nil
	})
	if err != nil || elems != 1 {
		return 0, false, err
	}
	if hasContent {
		vals = vals[:0]
		switch dtype {
		case dtFloat:
			if len(content) == 4 {
				vals = append(vals, float64(math.Float32frombits(binary.LittleEndian.Uint32(content))))
			}
		case dtDouble:
			if len(content) == 8 {
				vals = append(vals, math.Float64frombits(binary.LittleEndian.Uint64(content)))
			}
		case dtInt32:
			if len(content) == 4 {
				vals = append(vals, float64(int32(binary.LittleEndian.Uint32(content))))
			}
		case dtInt64:
			if len(content) == 8 {
				vals = append(vals, float64(int64(binary.LittleEndian.Uint64(content))))
			}
		}
	}
	if len(vals) != 1 {
		return 0, false, nil
	}
	return vals[0], true, nil
}

// shapeElems returns the number of elements a TensorShapeProto describes,
// or -1 when a dimension is unknown.
func shapeElems(b []byte) (int64, error) {
	n := int64(1)
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if num != shapeDim || typ != protowire.BytesType {
			return nil
		}
		size := int64(0) // proto3: an absent size is 0
		err := eachField(v, func(num protowire.Number, typ protowire.Type, _ []byte, u uint64) error {
			if num == dimSize && typ == protowire.VarintType {
				size = int64(u)
			}
			return nil
		})
		if size < 0 || n < 0 {
			n = -1
		} else {
			n *= size
		}
		return err
	})
	return n, err
}

// appendRepeated decodes one occurrence of a repeated scalar field, packed
// (a length-delimited run) or not (a single value of wire type elem).
func appendRepeated(vals *[]float64, typ protowire.Type, v []byte, u uint64, elem protowire.Type, conv func(uint64) float64) error {
	if typ == elem {
		*vals = append(*vals, conv(u))
		return nil
	}
	if typ != protowire.BytesType {
		return nil
	}
	for len(v) > 0 {
		var x uint64
		var n int
		switch elem {
		case protowire.Fixed32Type:
			var x32 uint32
			x32, n = protowire.ConsumeFixed32(v)
			x = uint64(x32)
		case protowire.Fixed64Type:
			x, n = protowire.ConsumeFixed64(v)
		default:
			x, n = protowire.ConsumeVarint(v)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		*vals = append(*vals, conv(x))
		v = v[n:]
	}
	return nil
}

// eachField calls fn for every field of a serialized message: v holds a
// length-delimited field's bytes, u a varint or fixed-width field's value.
// Groups are skipped.
func eachField(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte, u uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		var v []byte
		var u uint64
		switch typ {
		case protowire.VarintType:
			u, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var u32 uint32
			u32, n = protowire.ConsumeFixed32(b)
			u = uint64(u32)
		case protowire.Fixed64Type:
			u, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if typ == protowire.StartGroupType {
			continue
		}
		if err := fn(num, typ, v, u); err != nil {
			return err
		}
	}
	return nil
}
