from utils import clamp, percent, slugify, truncate

if __name__ == "__main__":
    print(slugify("Quarterly Report: Q3"), truncate("A very long headline indeed", 12))
    print(clamp(140, 0, 100), percent(3, 8))
