package manifests

import (
	"encoding/binary"
	"math"
	"sync"
)

// decodeFunc decodes len(dst) little-endian elements from src to float64.
type decodeFunc func(dst []float64, src []byte)

func decodeU8(dst []float64, src []byte) {
	for i := range dst {
		dst[i] = float64(src[i])
	}
}

func decodeI8(dst []float64, src []byte) {
	for i := range dst {
		dst[i] = float64(int8(src[i]))
	}
}

func decodeU16(dst []float64, src []byte) {
	for i := range dst {
		dst[i] = float64(binary.LittleEndian.Uint16(src[2*i:]))
	}
}

func decodeI16(dst []float64, src []byte) {
	for i := range dst {
		dst[i] = float64(int16(binary.LittleEndian.Uint16(src[2*i:])))
	}
}

func decodeU32(dst []float64, src []byte) {
	for i := range dst {
		dst[i] = float64(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

func decodeI32(dst []float64, src []byte) {
	for i := range dst {
		dst[i] = float64(int32(binary.LittleEndian.Uint32(src[4*i:])))
	}
}

func decodeU64(dst []float64, src []byte) {
	for i := range dst {
		dst[i] = float64(binary.LittleEndian.Uint64(src[8*i:]))
	}
}

func decodeI64(dst []float64, src []byte) {
	for i := range dst {
		dst[i] = float64(int64(binary.LittleEndian.Uint64(src[8*i:])))
	}
}

func decodeF32(dst []float64, src []byte) {
	for i := range dst {
		dst[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:])))
	}
}

func decodeF64(dst []float64, src []byte) {
	for i := range dst {
		dst[i] = math.Float64frombits(binary.LittleEndian.Uint64(src[8*i:]))
	}
}

// decode16 decodes 2-byte elements through a table of all 65536 values,
// which is faster than computing each one.
func decode16(lut *[1 << 16]float64, dst []float64, src []byte) {
	src = src[:2*len(dst)]
	for i := range dst {
		dst[i] = lut[uint16(src[2*i])|uint16(src[2*i+1])<<8]
	}
}

// decode8 decodes 1-byte floats through a table of all 256 values.
func decode8(lut *[1 << 8]float64, dst []float64, src []byte) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] = lut[src[i]]
	}
}

// decodeBF16 and decodeF16 let the machine's vector conversion do what it
// can and the table the rest.
func decodeBF16(dst []float64, src []byte) {
	n := decodeBF16Fast(dst, src)
	decode16(bf16Table(), dst[n:], src[2*n:])
}

func decodeF16(dst []float64, src []byte) {
	n := decodeF16Fast(dst, src)
	decode16(f16Table(), dst[n:], src[2*n:])
}

func decodeF8E4M3(dst []float64, src []byte) { decode8(f8e4m3Table(), dst, src) }
func decodeF8E5M2(dst []float64, src []byte) { decode8(f8e5m2Table(), dst, src) }

// The tables are built on first use, so a program that never diffs pays
// neither the time nor the 1 MiB.
var (
	bf16Table = sync.OnceValue(func() *[1 << 16]float64 {
		var t [1 << 16]float64
		for u := range t {
			t[u] = float64(math.Float32frombits(uint32(u) << 16))
		}
		return &t
	})
	f16Table = sync.OnceValue(func() *[1 << 16]float64 {
		var t [1 << 16]float64
		for u := range t {
			t[u] = minifloat(uint32(u), 5, 10, true)
		}
		return &t
	})
	f8e4m3Table = sync.OnceValue(func() *[1 << 8]float64 { return table8(4, 3, false) })
	f8e5m2Table = sync.OnceValue(func() *[1 << 8]float64 { return table8(5, 2, true) })
)

func table8(expBits, manBits uint, ieee bool) *[1 << 8]float64 {
	var t [1 << 8]float64
	for u := range t {
		t[u] = minifloat(uint32(u), expBits, manBits, ieee)
	}
	return &t
}

// minifloat decodes a sign | exponent | mantissa float of 1+expBits+manBits
// bits with bias 2^(expBits-1)-1 and subnormals. With ieee, an all-ones
// exponent means infinity (mantissa 0) or NaN, as in F16 and F8_E5M2.
// Without it (the "fn" variants, F8_E4M3), there is no infinity and only the
// all-ones exponent with the all-ones mantissa is NaN (0x7F, 0xFF).
func minifloat(u uint32, expBits, manBits uint, ieee bool) float64 {
	bias := 1<<(expBits-1) - 1
	maxExp := uint32(1)<<expBits - 1
	manMask := uint32(1)<<manBits - 1
	e := (u >> manBits) & maxExp
	m := u & manMask
	var v float64
	switch {
	case ieee && e == maxExp && m == 0:
		v = math.Inf(1)
	case ieee && e == maxExp, !ieee && e == maxExp && m == manMask:
		return math.NaN()
	case e == 0:
		v = math.Ldexp(float64(m), 1-bias-int(manBits))
	default:
		v = math.Ldexp(float64(manMask+1+m), int(e)-bias-int(manBits))
	}
	if u>>(expBits+manBits)&1 == 1 {
		v = -v
	}
	return v
}
