//! What a terminal is sent to show a prepared image at the cursor: a sixel image, a kitty image
//! (PNG data, direct placement), or an iTerm2 inline image (PNG data).

use base64::Engine;
use image::RgbImage;

/// Kitty takes at most 4096 bytes of base64 per escape.
const KITTY_CHUNK: usize = 4096;

/// A PNG of a scaled or marked picture for kitty and iTerm2. Scaling makes many more distinct
/// colours than a page has, which compress badly; 32 levels per channel (as many colours as
/// sixel's palette, and finer) bring an 800x600 page back from about 190 KB to 130 KB of base64
/// (measured on the demo catalog), under the 150 KB a frame may cost over SSH.
pub fn png(image: &RgbImage) -> Vec<u8> {
    use image::codecs::png::{CompressionType, FilterType, PngEncoder};
    use image::ImageEncoder;
    let mut levels = image.clone();
    for channel in levels.iter_mut() {
        let kept = *channel & 0xf8;
        *channel = kept | (kept >> 5);
    }
    let mut bytes = Vec::new();
    let encoder =
        PngEncoder::new_with_quality(&mut bytes, CompressionType::Default, FilterType::Adaptive);
    // Encoding into memory fails only for sizes the image type cannot have.
    let _ = encoder.write_image(
        levels.as_raw(),
        levels.width(),
        levels.height(),
        image::ExtendedColorType::Rgb8,
    );
    bytes
}

/// A sixel image with at most `colors` colours and no dithering: text stays sharp, and flat page
/// colours compress well (an 800x600 page is about 120 KB).
pub fn sixel(image: &RgbImage, colors: u16) -> Result<String, String> {
    let rgba = image::DynamicImage::ImageRgb8(image.clone()).to_rgba8();
    let options = icy_sixel::EncodeOptions {
        max_colors: colors.clamp(2, 256),
        diffusion: 0.0,
        ..icy_sixel::EncodeOptions::default()
    };
    icy_sixel::sixel_encode(
        rgba.as_raw(),
        image.width() as usize,
        image.height() as usize,
        &options,
    )
    .map_err(|err| format!("sixel encoding failed: {err}"))
}

/// Transmit PNG data as kitty image `id` and show it at the cursor at its own pixel size, without
/// moving the cursor. `q=2`: no replies, so nothing comes back into the input.
pub fn kitty_show(png: &[u8], id: u32) -> String {
    let data = base64::engine::general_purpose::STANDARD.encode(png);
    let chunks: Vec<&str> = data
        .as_bytes()
        .chunks(KITTY_CHUNK)
        .map(|c| std::str::from_utf8(c).unwrap_or_default())
        .collect();
    let mut out = String::with_capacity(data.len() + chunks.len() * 16 + 64);
    for (i, chunk) in chunks.iter().enumerate() {
        let more = u8::from(i + 1 < chunks.len());
        if i == 0 {
            out.push_str(&format!(
                "\x1b_Ga=T,f=100,t=d,i={id},q=2,C=1,m={more};{chunk}\x1b\\"
            ));
        } else {
            out.push_str(&format!("\x1b_Gm={more};{chunk}\x1b\\"));
        }
    }
    out
}

/// Show kitty image `id` (already transmitted) at the cursor again.
pub fn kitty_place(id: u32) -> String {
    format!("\x1b_Ga=p,i={id},q=2,C=1\x1b\\")
}

/// Take kitty image `id` off the screen; with `free`, forget its data too.
pub fn kitty_delete(id: u32, free: bool) -> String {
    let what = if free { 'I' } else { 'i' };
    format!("\x1b_Ga=d,d={what},i={id},q=2\x1b\\")
}

/// An iTerm2 inline image of PNG data, shown at `width` x `height` screen pixels.
pub fn iterm2(png: &[u8], width: u32, height: u32) -> String {
    let data = base64::engine::general_purpose::STANDARD.encode(png);
    format!(
        "\x1b]1337;File=inline=1;size={};width={width}px;height={height}px;preserveAspectRatio=0:{data}\x07",
        png.len()
    )
}

/// Wrap an escape for tmux's passthrough (`allow-passthrough on`): inner ESCs are doubled.
pub fn passthrough(escape: &str) -> String {
    format!("\x1bPtmux;{}\x1b\\", escape.replace('\x1b', "\x1b\x1b"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page() -> RgbImage {
        RgbImage::from_fn(80, 60, |x, y| {
            if y < 10 || (20..40).contains(&x) {
                image::Rgb([20, 30, 90])
            } else {
                image::Rgb([255, 255, 255])
            }
        })
    }

    #[test]
    fn png_keeps_32_levels_per_channel() {
        let image = RgbImage::from_fn(64, 8, |x, y| {
            image::Rgb([(x * 4) as u8, 255, (y * 30) as u8])
        });
        let decoded = image::load_from_memory(&png(&image)).unwrap().to_rgb8();
        for (a, b) in image.pixels().zip(decoded.pixels()) {
            for (a, b) in a.0.iter().zip(b.0) {
                assert!(a.abs_diff(b) <= 7, "{a} {b}");
            }
        }
        // Flat colours stay exact (white stays white, black black).
        assert_eq!(decoded.get_pixel(0, 0).0[1], 255);
        let page = page();
        assert_eq!(
            image::load_from_memory(&png(&page))
                .unwrap()
                .to_rgb8()
                .get_pixel(50, 50)
                .0,
            [255, 255, 255]
        );
    }

    #[test]
    fn sixel_is_one_dcs_at_square_pixels() {
        let sixel = sixel(&page(), 256).unwrap();
        assert!(
            sixel.starts_with("\x1bP9;1;0q\"1;1;80;60"),
            "{:?}",
            &sixel[..30]
        );
        assert!(sixel.ends_with("\x1b\\"));
        // Two colours in, two colour registers out.
        assert_eq!(sixel.matches(";2;").count(), 2);
    }

    #[test]
    fn kitty_chunks_carry_the_png_and_only_the_first_says_what() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let shown = kitty_show(&data, 3);
        let escapes: Vec<&str> = shown.split_terminator("\x1b\\").collect();
        assert!(escapes.len() > 2);
        assert!(escapes[0].starts_with("\x1b_Ga=T,f=100,t=d,i=3,q=2,C=1,m=1;"));
        assert!(escapes[1..escapes.len() - 1]
            .iter()
            .all(|e| e.starts_with("\x1b_Gm=1;")));
        assert!(escapes.last().unwrap().starts_with("\x1b_Gm=0;"));
        let payload: String = escapes
            .iter()
            .map(|e| e.split_once(';').unwrap().1)
            .collect();
        assert!(escapes
            .iter()
            .all(|e| e.split_once(';').unwrap().1.len() <= KITTY_CHUNK));
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(payload)
            .unwrap();
        assert_eq!(decoded, data);
        assert_eq!(kitty_delete(3, false), "\x1b_Ga=d,d=i,i=3,q=2\x1b\\");
        assert_eq!(kitty_delete(3, true), "\x1b_Ga=d,d=I,i=3,q=2\x1b\\");
    }

    #[test]
    fn iterm2_and_tmux_wrapping() {
        let inline = iterm2(b"png", 400, 300);
        assert!(inline.starts_with("\x1b]1337;File=inline=1;size=3;width=400px;height=300px;"));
        assert!(inline.ends_with(":cG5n\x07"));
        assert_eq!(passthrough("\x1b[1mX"), "\x1bPtmux;\x1b\x1b[1mX\x1b\\");
    }
}
