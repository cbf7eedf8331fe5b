"""A line chart as a PNG file, with nothing but zlib: the benchmarks draw
their charts for the docs without a plotting library.

``line_chart(path, series)`` draws each series (``[(x, y), ...]`` and an
RGB colour) as a polyline with square marks, on axes from 0 to the
largest x and ``y_max``, with grid lines and their values (digits drawn
from a 3x5 pixel font). Captions belong in the document around it.
"""

import struct
import zlib

WIDTH, HEIGHT = 640, 400
LEFT, RIGHT, TOP, BOTTOM = 56, 20, 20, 36
WHITE, GREY, BLACK = (255, 255, 255), (215, 215, 215), (40, 40, 40)

# Digits and '.', 3 pixels wide, 5 high, as rows of bits.
FONT = {
    '0': (7, 5, 5, 5, 7), '1': (2, 6, 2, 2, 7), '2': (7, 1, 7, 4, 7),
    '3': (7, 1, 7, 1, 7), '4': (5, 5, 7, 1, 1), '5': (7, 4, 7, 1, 7),
    '6': (7, 4, 7, 5, 7), '7': (7, 1, 1, 1, 1), '8': (7, 5, 7, 5, 7),
    '9': (7, 5, 7, 1, 7), '.': (0, 0, 0, 0, 2),
}
SCALE = 2


class Canvas:

    def __init__(self, width, height):
        self.width, self.height = width, height
        self.rows = [bytearray(bytes(WHITE) * width) for _ in range(height)]

    def dot(self, x, y, colour):
        x, y = int(round(x)), int(round(y))
        if 0 <= x < self.width and 0 <= y < self.height:
            self.rows[y][3 * x:3 * x + 3] = bytes(colour)

    def square(self, x, y, half, colour):
        for dx in range(-half, half + 1):
            for dy in range(-half, half + 1):
                self.dot(x + dx, y + dy, colour)

    def line(self, x0, y0, x1, y1, colour, width=1):
        steps = int(max(abs(x1 - x0), abs(y1 - y0))) + 1
        for i in range(steps + 1):
            t = i / steps
            x, y = x0 + (x1 - x0) * t, y0 + (y1 - y0) * t
            if width == 1:
                self.dot(x, y, colour)
            else:
                self.square(x, y, width // 2, colour)

    def text(self, x, y, text, colour=BLACK):
        """``text`` (digits and dots) with its top left corner at x, y."""
        for char in text:
            for row, bits in enumerate(FONT.get(char, (0,) * 5)):
                for col in range(3):
                    if bits & (4 >> col):
                        for dx in range(SCALE):
                            for dy in range(SCALE):
                                self.dot(x + col * SCALE + dx,
                                         y + row * SCALE + dy, colour)
            x += 4 * SCALE

    def png(self):
        raw = b''.join(b'\x00' + bytes(row) for row in self.rows)

        def chunk(kind, data):
            return (struct.pack('>I', len(data)) + kind + data
                    + struct.pack('>I', zlib.crc32(kind + data)))
        header = struct.pack('>IIBBBBB', self.width, self.height, 8, 2, 0,
                             0, 0)
        return (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', header)
                + chunk(b'IDAT', zlib.compress(raw, 9))
                + chunk(b'IEND', b''))


def _label(value):
    return ('%d' % value if value == int(value) else '%.1f' % value)


def _ticks(top, count=5):
    return [top * i / count for i in range(count + 1)]


def line_chart(path, series, y_max=None, x_max=None):
    """Write the chart of ``series`` (``[(points, rgb), ...]``) to
    ``path``."""
    xs = [x for points, _ in series for x, _y in points] or [1]
    ys = [y for points, _ in series for _x, y in points] or [1]
    x_max = x_max or max(xs)
    y_max = y_max or max(ys) or 1
    canvas = Canvas(WIDTH, HEIGHT)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def at(x, y):
        return (LEFT + plot_w * x / x_max,
                TOP + plot_h * (1 - min(y, y_max) / y_max))

    for tick in _ticks(y_max):
        _, y = at(0, tick)
        canvas.line(LEFT, y, WIDTH - RIGHT, y, GREY)
        text = _label(tick)
        canvas.text(LEFT - 6 - 8 * len(text), y - 5, text)
    for tick in _ticks(x_max):
        x, _ = at(tick, 0)
        canvas.line(x, TOP, x, HEIGHT - BOTTOM, GREY)
        text = _label(tick)
        canvas.text(x - 4 * len(text), HEIGHT - BOTTOM + 8, text)
    canvas.line(LEFT, TOP, LEFT, HEIGHT - BOTTOM, BLACK)
    canvas.line(LEFT, HEIGHT - BOTTOM, WIDTH - RIGHT, HEIGHT - BOTTOM, BLACK)
    for points, colour in series:
        placed = [at(x, y) for x, y in sorted(points)]
        for (x0, y0), (x1, y1) in zip(placed, placed[1:], strict=False):
            canvas.line(x0, y0, x1, y1, colour, width=3)
        for x, y in placed:
            canvas.square(x, y, 4, colour)
    with open(path, 'wb') as f:
        f.write(canvas.png())
