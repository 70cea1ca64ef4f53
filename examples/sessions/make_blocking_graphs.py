"""Write the TensorFlow graphs of the sessions' imported critical sections and
queues (docs/sessions.md, "Imported from TensorFlow graphs").

Run with a Python that has TensorFlow (tensorflow-cpu 2.21 was used):

    python examples/sessions/make_blocking_graphs.py

* ``critical_section.pbtxt``: a resource variable ``x`` and
  ``tf.CriticalSection.execute`` of a read-increment-write of it, the
  value it returns fetched as ``out`` (MutexV2, MutexLock, ConsumeMutexLock
  as TensorFlow writes them in graph mode).
* ``critical_section_function.pbtxt``: the same with ``assign_add``, the
  ``execute`` inside a ``tf.function`` called from the graph (a
  StatefulPartitionedCall whose body holds the mutex ops).
* ``fifo_queue.pbtxt``: ``tf.queue.FIFOQueue(1, tf.int64, shapes=[[]])``
  with ``enq`` (of the constant 7), ``deq`` and ``sz`` (its size).
* ``fifo_batches.pbtxt``: a capacity-2 queue with ``put`` (enqueue_many of
  [1, 2, 3]), ``pair`` (dequeue_many(2)), ``one`` (dequeue), ``close``,
  ``cancel`` (close with cancel_pending_enqueues) and ``sz``.
* ``section_queue.pbtxt``: one ``tf.CriticalSection`` executed twice, around
  an enqueue of 7 (``put``, run as the target ``put/group_deps_2``) and
  around a dequeue of a capacity-1 FIFOQueue (``get``, fetched as ``item``):
  a consumer that takes the section first waits inside it for an item the
  producer cannot enqueue.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402

HERE = Path(__file__).resolve().parent


def critical_section() -> tf.Graph:
    g = tf.Graph()
    with g.as_default():
        v = tf.compat.v1.get_variable("x", initializer=tf.constant(0, tf.int64),
                                      use_resource=True)
        cs = tf.CriticalSection(shared_name="cs")

        def increment():
            return v.assign(v.read_value() + 1, read_value=True)
        tf.identity(cs.execute(increment), name="out")
    return g


def critical_section_function() -> tf.Graph:
    g = tf.Graph()
    with g.as_default():
        v = tf.compat.v1.get_variable("x", initializer=tf.constant(0, tf.int64),
                                      use_resource=True)
        cs = tf.CriticalSection(shared_name="cs")

        @tf.function
        def step():
            return cs.execute(lambda: v.assign_add(1, read_value=True))
        tf.identity(step(), name="out")
    return g


def fifo_queue() -> tf.Graph:
    g = tf.Graph()
    with g.as_default():
        q = tf.queue.FIFOQueue(1, [tf.int64], shapes=[[]], name="q", shared_name="q")
        q.enqueue(tf.constant(7, tf.int64), name="enq")
        q.dequeue(name="deq")
        q.size(name="sz")
    return g


def fifo_batches() -> tf.Graph:
    g = tf.Graph()
    with g.as_default():
        q = tf.queue.FIFOQueue(2, [tf.int64], shapes=[[]], name="q", shared_name="q")
        q.enqueue_many(tf.constant([1, 2, 3], tf.int64), name="put")
        q.dequeue_many(2, name="pair")
        q.dequeue(name="one")
        q.close(name="close")
        q.close(cancel_pending_enqueues=True, name="cancel")
        q.size(name="sz")
    return g


def section_queue() -> tf.Graph:
    g = tf.Graph()
    with g.as_default():
        q = tf.queue.FIFOQueue(1, [tf.int64], shapes=[[]], name="q", shared_name="q")
        cs = tf.CriticalSection(shared_name="cs")
        cs.execute(lambda: q.enqueue(tf.constant(7, tf.int64)), name="put")
        tf.identity(cs.execute(q.dequeue, name="get"), name="item")
    return g


if __name__ == "__main__":
    for name, make in (("critical_section", critical_section),
                       ("critical_section_function", critical_section_function),
                       ("fifo_queue", fifo_queue), ("fifo_batches", fifo_batches),
                       ("section_queue", section_queue)):
        tf.io.write_graph(make().as_graph_def(), str(HERE), f"{name}.pbtxt", as_text=True)
        print(f"wrote {HERE / (name + '.pbtxt')}")
