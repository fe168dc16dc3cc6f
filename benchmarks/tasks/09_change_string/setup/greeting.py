def greeting(name):
    return f"Hi, {name}!"


if __name__ == "__main__":
    print(greeting("Bob"))
