from stats import last_n

assert last_n([1, 2, 3, 4, 5], 2) == [4, 5], last_n([1, 2, 3, 4, 5], 2)
assert last_n([1, 2, 3], 3) == [1, 2, 3]
print("ok")
