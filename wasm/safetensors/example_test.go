package safetensors_test

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/kvit-s/clefcheck/wasm/safetensors"
)

func ExampleNewReader() {
	var file bytes.Buffer
	if err := safetensors.Encode(&file, map[string]string{"format": "pt"}, []safetensors.Tensor{
		{Spec: safetensors.Spec{Name: "w.lora_A.weight", DType: "BF16", Shape: []int64{2, 3}}, Data: make([]byte, 12)},
		{Spec: safetensors.Spec{Name: "w.lora_B.weight", DType: "F32", Shape: []int64{4, 2}}, Data: make([]byte, 32)},
	}); err != nil {
		panic(err)
	}
	data := file.Bytes()
	r, err := safetensors.NewReader(bytes.NewReader(data), int64(len(data)), "adapter_model.safetensors")
	if err != nil {
		panic(err)
	}
	fmt.Println("metadata:", r.Metadata)
	for _, t := range r.Tensors {
		fmt.Printf("%s %s %v: bytes %d–%d\n", t.Name, t.DType, t.Shape, t.Offset, t.Offset+t.Bytes())
	}

	// A byte more at the end is a layout violation, not a tensor.
	data = append(data, 0)
	_, err = safetensors.NewReader(bytes.NewReader(data), int64(len(data)), "adapter_model.safetensors")
	fmt.Println(errors.Is(err, safetensors.ErrLayout), err)
	// Output:
	// metadata: map[format:pt]
	// w.lora_A.weight BF16 [2 3]: bytes 184–196
	// w.lora_B.weight F32 [4 2]: bytes 196–228
	// true adapter_model.safetensors: 1 trailing bytes after the last tensor (data buffer 45 bytes, tensors cover 44)
}
