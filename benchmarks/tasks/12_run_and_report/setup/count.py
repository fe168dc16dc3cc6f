print(sum(range(7)) * 2)
