// Attention heatmaps: where the decoder looks at each step, as terminal text, SVG and PNG.
//
// viz takes strings and float matrices, never models (DESIGN.md): the decoder hands over
// the tokens and the attention rows it kept, and these functions only draw them.
//
// Every function here validates the map first (validate()) and throws ValueError naming
// the map's title, the row/column and the token when something is wrong.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "qkv/viz/color.h"

namespace qkv::viz {

// One attention matrix: target token t attends to source token s with weight
// weights[t * source.size() + s].
struct AttentionMap {
  std::vector<std::string> source;  // [Tk] column labels (UTF-8)
  std::vector<std::string> target;  // [Tq] row labels (UTF-8)
  // [Tq, Tk] row-major. Each weight in [0, 1] (1e-3 of slack for float sums); a row is
  // usually a distribution but need not sum to 1 (a row cut short or fully masked sums to
  // less), so only the range is checked.
  std::vector<float> weights;
  std::string title;  // e.g. "layer 2, head 5"; may be empty
};

// Throws ValueError unless: source and target are non-empty, weights has exactly
// target.size() * source.size() values, every weight is finite and in [0, 1 + 1e-3], and
// every label and the title are valid UTF-8. The message names what is wrong, e.g.
// "attention map 'x': weight at row 2 (target 'Haus'), column 1 (source 'house') is NaN".
void validate(const AttentionMap& map);

// SentencePiece's convention for word starts: token i starts a word when it begins with
// "▁" (U+2581), when i == 0, or when it or the token before it is a special symbol
// written "<...>" (</s>, <unk>, ...), so "</s>" never glues onto the last word.
// tokens [T] -> flags [T].
std::vector<bool> sentencepiece_word_starts(const std::vector<std::string>& tokens);

// Merges subword pieces into words. source_word_starts [Tk] and target_word_starts [Tq]
// say which tokens begin a new word (token 0 always does). Returns a map of
// [Wq, Wk] words:
// - source columns of one word are *summed*: the attention mass a target step puts on a
//   word is the mass it puts on all of its pieces, so rows keep their sums (a
//   distribution stays a distribution);
// - target rows of one word are *averaged*: each piece's row is a distribution over the
//   source, and their mean is the word's, whereas a sum would exceed 1;
// - labels are the pieces concatenated with each piece's leading "▁" removed.
// Throws ValueError when the map is invalid or a flag vector's size differs from its
// token count (naming both).
AttentionMap merge_subwords(const AttentionMap& map, const std::vector<bool>& source_word_starts,
                            const std::vector<bool>& target_word_starts);

// Shading of the terminal heatmap: the weight picks the nearest of five levels
// 0, 0.25, 0.5, 0.75, 1 (' ', '░', '▒', '▓', '█'), i.e. thresholds 0.125, 0.375, ...
char32_t shade_for(float weight);

enum class ColumnLabels {
  Auto,      // Vertical when every label fits max_label_height (and the cells), else Numbered
  Vertical,  // each source token written top to bottom above its column
  Numbered,  // 1-based column numbers, written vertically, and a legend "1 token  2 token"
};

struct TerminalOptions {
  // Terminal columns; 0 = unlimited. A grid wider than this is split into panels of
  // columns, each with its own header.
  int max_width = 80;
  ColumnLabels column_labels = ColumnLabels::Auto;
  int max_label_height = 10;     // Auto: the longest vertical source label (characters)
  int max_row_label_width = 24;  // target labels wider than this end in "…" (>= 2)
  // ANSI 256-colour: every cell a full block in its viridis colour instead of a shade.
  bool color = false;
  bool show_scale = true;  // a last line explaining the shades (or colours)
};

// The map as text for a monospace terminal: a title line (if any), the column header,
// one line per target token ("label │cells│"), each cell two columns wide (one when
// that is the only way to fit max_width), then the scale. Widths are display columns:
// code points, with East Asian wide characters counting two and combining marks zero,
// so German umlauts and CJK labels line up. Every line ends in '\n'. Throws ValueError
// for an invalid map or negative max_width, max_label_height < 1, max_row_label_width < 2.
std::string render_terminal(const AttentionMap& map, const TerminalOptions& options = {});

struct SvgOptions {
  int cell_size = 24;  // px
  int font_size = 12;  // px
  ColorMap color_map = ColorMap::Viridis;
};

// A standalone SVG document (no XML declaration, so it can also be inlined into HTML):
// source tokens rotated on top, target tokens on the left, one <rect class="cell"> per
// weight with a <title> tooltip "target → source: 0.123", and a colour scale legend.
// Cells and labels carry data-row / data-col (and cells data-w) so a page can script
// them; the root has class "qkv-heatmap". Labels are XML-escaped.
std::string render_svg(const AttentionMap& map, const SvgOptions& options = {});

struct PngOptions {
  int cell_px = 24;  // each weight becomes a cell_px × cell_px square
  ColorMap color_map = ColorMap::Viridis;
  // The title on top, the source tokens turned a quarter left above their columns, the
  // target tokens left of their rows and a colour scale (0, 0.5, 1) on the right, in qkv's
  // bitmap font (ASCII and accented Latin letters; other characters show as a box: use
  // the SVG for other scripts). false: the bare grid, for thumbnails.
  bool labels = true;
  // Font pixels per glyph pixel: characters of 6·s × 11·s px (12 × 22 at 2). Labels need
  // cell_px >= 11; a smaller cell lowers the scale to fit (cell_px / 11).
  int font_scale = 2;
  int max_label_chars = 20;  // longer tokens end in "…" (>= 2)
};

// The heatmap as PNG bytes, 8-bit grayscale for ColorMap::Gray, 8-bit RGB otherwise. With
// labels the grid sits below and right of them; without, the image is exactly
// (Tk * cell_px) × (Tq * cell_px). Throws ValueError for cell_px < 1 (or < 11 with
// labels), font_scale outside [1, 16] or max_label_chars < 2, ResourceError when a side
// would exceed 32768 px or the image 2^26 pixels.
std::vector<uint8_t> encode_png(const AttentionMap& map, const PngOptions& options = {});

// encode_png() written to `path` through a temporary file in the same directory and a
// rename, so a reader never sees a half-written image. Throws IoError naming `path`.
void write_png(const std::filesystem::path& path, const AttentionMap& map,
               const PngOptions& options = {});

}  // namespace qkv::viz
