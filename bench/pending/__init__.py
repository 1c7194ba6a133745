"""The service's CPU per pending session, with every waiter long-polling."""
