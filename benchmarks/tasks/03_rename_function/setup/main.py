from shop import calc_total

if __name__ == "__main__":
    print(calc_total([1.0, 2.5, 3.25], 0.2))
    print(calc_total([10], 0.0))
