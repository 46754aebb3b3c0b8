import Kafka
