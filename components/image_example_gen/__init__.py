"""Image ExampleGen: IDX files or labelled image folders to tf.train.Examples."""
