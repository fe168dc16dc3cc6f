"""Shop-wide settings."""

TAX_RATE = 0.2
SHOP_NAME = "Corner Hardware"
