package files

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"

	"golang.org/x/image/draw"
)

// PreviewSize is the largest side of a preview, in pixels.
const PreviewSize = 320

// Preview decodes an image Sniff accepted and returns a JPEG of it whose
// larger side is at most PreviewSize pixels (an image smaller than that
// keeps its size). It checks the dimensions again before decoding.
func Preview(data []byte) ([]byte, error) {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("preview: %w", err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > MaxPixels {
		return nil, fmt.Errorf("preview: %dx%d is too large to decode", cfg.Width, cfg.Height)
	}
	src, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("preview: %w", err)
	}
	b := src.Bounds()
	w, h := b.Dx(), b.Dy()
	if w > PreviewSize || h > PreviewSize {
		if w >= h {
			w, h = PreviewSize, max(1, h*PreviewSize/w)
		} else {
			w, h = max(1, w*PreviewSize/h), PreviewSize
		}
	}
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(dst, dst.Bounds(), image.White, image.Point{}, draw.Src) // transparency on white
	draw.CatmullRom.Scale(dst, dst.Bounds(), src, b, draw.Over, nil)
	var out bytes.Buffer
	if err := jpeg.Encode(&out, dst, &jpeg.Options{Quality: 80}); err != nil {
		return nil, fmt.Errorf("preview: %w", err)
	}
	return out.Bytes(), nil
}
