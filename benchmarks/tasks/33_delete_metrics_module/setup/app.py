import metrics
from worker import process

ORDERS = [{"id": 1, "qty": 2}, {"id": 2, "qty": 0}, {"id": 3, "qty": 5}]


def main():
    metrics.count("start")
    done = process(ORDERS)
    print(f"processed {len(done)} of {len(ORDERS)} orders")
    metrics.count("orders", len(done))
    print(metrics.summary())


if __name__ == "__main__":
    main()
