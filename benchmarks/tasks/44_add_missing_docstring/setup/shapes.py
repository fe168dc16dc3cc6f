"""Areas and perimeters of simple shapes."""

import math


def circle_area(radius):
    """Area of a circle of this radius."""
    return math.pi * radius**2


def circle_perimeter(radius):
    """Circumference of a circle of this radius."""
    return 2 * math.pi * radius


def rectangle_area(width, height):
    """Area of a width x height rectangle."""
    return width * height


def rectangle_perimeter(width, height):
    return 2 * (width + height)


def triangle_area(a, b, c):
    """Area of a triangle with sides a, b and c (Heron's formula)."""
    s = (a + b + c) / 2
    return math.sqrt(s * (s - a) * (s - b) * (s - c))


class Square:
    """A square of side `side`."""

    def __init__(self, side):
        """Remember the side."""
        self.side = side

    def area(self):
        """Its area."""
        return rectangle_area(self.side, self.side)
